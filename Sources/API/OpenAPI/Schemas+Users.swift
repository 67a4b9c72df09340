extension OpenAPIComponents {
    /// Schemas of users' profiles (`/v1/users/{id}`).
    static let usersSchemas = #"""
    {
      "UserProfileUpdate": {
        "type": "object",
        "description": "Exactly `locale`: a language tag, or null to clear it. Other members are refused.",
        "required": ["locale"],
        "properties": {
          "locale": {
            "type": ["string", "null"],
            "minLength": 2,
            "maxLength": 35,
            "pattern": "^[A-Za-z]{2,3}([-_][A-Za-z]{3}){0,3}([-_][A-Za-z]{4})?([-_]([A-Za-z]{2}|[0-9]{3}))?([-_]([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*([-_][A-WY-Za-wy-z0-9]([-_][A-Za-z0-9]{2,8})+)*([-_][Xx]([-_][A-Za-z0-9]{1,8})+)?$",
            "description": "A BCP 47 language tag (`pt-BR`, `zh-Hant-TW`, `es-419`; `_` is read as `-`), well formed by RFC 5646 §2.1 (language, extlangs, script, region, variants, extensions, private use, in that order), normalised to the usual case; null clears it."
          }
        },
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
