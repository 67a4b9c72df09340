extension OpenAPIComponents {
    /// Schemas of users' profiles (`/v1/users/{id}`).
    static let usersSchemas = #"""
    {
      "UserProfileUpdate": {
        "type": "object",
        "description": "Exactly `locale`: a language tag, or null to clear it. Other members are refused.",
        "required": ["locale"],
        "properties": {"locale": {"oneOf": [{"$ref": "#/components/schemas/LocaleTag"}, {"type": "null"}]}},
        "additionalProperties": false
      },
      "UserProfile": {
        "type": "object",
        "required": ["user_id", "locale", "updated_at"],
        "properties": {
          "user_id": {"$ref": "#/components/schemas/UserID"},
          "locale": {"type": ["string", "null"], "description": "Normalised language tag (`pt-BR`); null when not set."},
          "updated_at": {"type": ["string", "null"], "format": "date-time", "description": "When it was last set; null for a user never set."}
        },
        "additionalProperties": false
      }
    }
    """#
}
