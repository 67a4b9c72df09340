extension OpenAPIComponents {
    /// Schemas every area uses: errors, names, cursors, times.
    static let commonSchemas = #"""
    {
      "Error": {
        "type": "object",
        "description": "The one error shape of every non-2xx answer (docs/api.md).",
        "required": ["error", "message"],
        "properties": {
          "error": {"type": "string", "description": "Machine-readable code, e.g. `invalid_request`."},
          "message": {"type": "string", "description": "Human-readable explanation."},
          "field": {
            "type": "string",
            "description": "The offending field or parameter (validation errors), e.g. `messages[2].channel`."
          },
          "channel": {"type": "string", "description": "The channel a `forbidden_channel` refusal is about."},
          "reason": {
            "type": "string",
            "description": "The push provider's reason a token is invalid (`push_token_invalid`), e.g. `Unregistered`."
          }
        },
        "additionalProperties": false
      },
      "ChannelName": {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "pattern": "^[A-Za-z0-9_:.@-]{1,200}$",
        "description": "1-200 characters of `A-Z a-z 0-9 _ - : . @`.",
        "examples": ["generation:9f1c"]
      },
      "EventName": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
        "description": "1-64 characters of `A-Z a-z 0-9 _ - . :`.",
        "examples": ["status"]
      },
      "Cursor": {
        "type": "string",
        "pattern": "^[0-9a-f]{8}-(0|[1-9][0-9]{0,19})$",
        "description": "A stream cursor `<epoch>-<sequence>` (8 lower-case hex digits, a dash, a decimal sequence): the SSE `id:`.",
        "examples": ["6f1c2a9b-1042"]
      },
      "AppState": {"type": "string", "enum": ["foreground", "background"]},
      "Timestamp": {
        "type": "string",
        "format": "date-time",
        "description": "RFC 3339 UTC with milliseconds, e.g. `2026-11-29T19:44:07.123Z`."
      },
      "UnixMilliseconds": {"type": "integer", "description": "Unix time in milliseconds."},
      "UserID": {
        "type": "string",
        "minLength": 1,
        "maxLength": 195,
        "pattern": "^[A-Za-z0-9_:.@-]{1,195}$",
        "description": "A user id (`sub`) that forms the channel `user:{id}`: 1-195 characters of `A-Z a-z 0-9 _ - : . @`.",
        "examples": ["42"]
      },
      "Name": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
        "description": "A notification kind or a permission: 1-64 characters of `A-Z a-z 0-9 _ - . :`.",
        "examples": ["order.paid"]
      },
      "Scope": {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "pattern": "^[A-Za-z0-9_.:-]{1,200}$",
        "description": "A scope (a store, a team): 1-200 characters of `A-Z a-z 0-9 _ - . :`.",
        "examples": ["store:17"]
      },
      "PushName": {
        "type": ["string", "null"],
        "minLength": 1,
        "maxLength": 200,
        "pattern": "^[^\\u0000]*$",
        "description": "`thread_id`, `sound` or `android_channel_id`, the same rule on `POST /v1/notifications` and `POST /v1/push`: 1-200 characters (Unicode scalars, as `maxLength` counts them) without NUL (U+0000), or null; else 400 naming the member."
      },
      "LocaleTag": {
        "type": "string",
        "minLength": 2,
        "maxLength": 35,
        "pattern": "^[A-Za-z]{2,3}([-_][A-Za-z]{3}){0,3}([-_][A-Za-z]{4})?([-_]([A-Za-z]{2}|[0-9]{3}))?([-_]([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*([-_][A-WY-Za-wy-z0-9]([-_][A-Za-z0-9]{2,8})+)*([-_][Xx]([-_][A-Za-z0-9]{1,8})+)?$",
        "description": "A BCP 47 language tag such as `pt`, `en`, `pt-BR` or `zh-Hant-TW`, well formed by RFC 5646 §2.1 (language, extlangs, script, region, variants, extensions, private use, in that order; `_` is read as `-`); at most 35 characters. Read without regard to case and normalised (`pt_br` is `pt-BR`).",
        "examples": ["pt-BR"]
      }
    }
    """#
}
