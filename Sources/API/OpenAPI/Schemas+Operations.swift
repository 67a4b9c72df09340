extension OpenAPIComponents {
    /// Schemas of health, readiness, this document and the dev token.
    static let operationsSchemas = #"""
    {
      "Readiness": {
        "type": "object",
        "required": ["status", "loops", "storage", "problems", "push"],
        "properties": {
          "status": {"type": "string", "enum": ["ready", "not_ready"]},
          "loops": {"type": "integer", "minimum": 0},
          "storage": {
            "type": "string",
            "enum": ["ok", "full", "read_only", "busy", "stalled", "unavailable", "failed"],
            "description": "Whether a probe write (cached 1 s) committed: `ok`, or why not: `full` (no space on the database's volume), `read_only`, `busy` (locked past the busy timeout), `stalled` (no answer within 2 s: a frozen volume, a stopped server, a lock held that long), `unavailable`, `failed`."
          },
          "problems": {"type": "array", "items": {"type": "string"}},
          "push": {
            "type": "object", "additionalProperties": {"type": "string"},
            "description": "Each provider (and each stored app's provider that is not fine, as `apns@chat`): `disabled`, `ok`, `provider_misconfigured: <rejection>` while the mass-deletion guard holds (PU-5a), or `degraded: <reason>` while its recent requests all went unanswered (no answer by the send deadline, connection refused, TLS failure; the first answer clears it). Neither makes the node unready."
          },
          "push_degraded": {
            "type": "object",
            "description": "The providers `push` shows degraded, by the same key: the first unanswered request's reason, since when nothing answered, and how many requests went unanswered since.",
            "additionalProperties": {
              "type": "object",
              "required": ["reason", "since", "unanswered_requests"],
              "properties": {
                "reason": {"type": "string"},
                "since": {"type": "string", "format": "date-time"},
                "unanswered_requests": {"type": "integer", "minimum": 1}
              },
              "additionalProperties": false
            }
          },
          "apps_not_loaded": {
            "type": "object", "additionalProperties": {"type": "string"},
            "description": "Stored apps this node could not load at start, with why (`secrets_unreadable`, `setting_unusable: FIELD`): their keys and tokens are refused and their pushes wait (retried, never dead-lettered) until they load. They do not make the node unready."
          }
        }
      },
      "Health": {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string", "const": "ok"}},
        "additionalProperties": false
      },
      "OpenAPIDocument": {
        "type": "object",
        "required": ["openapi", "info", "paths"],
        "properties": {
          "openapi": {"type": "string", "const": "3.1.0"},
          "info": {"type": "object"},
          "paths": {"type": "object"}
        }
      },
      "DevTokenRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["user_id"],
        "properties": {
          "user_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 195,
            "pattern": "^[A-Za-z0-9_:.@-]{1,195}$",
            "description": "The token's `sub`: 1-195 characters of `A-Z a-z 0-9 _ - : . @` (it must name the channel `user:{sub}`)."
          },
          "session_id": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 200,
            "pattern": "^[^~]",
            "description": "The token's `sid`: 1-200 bytes of UTF-8 in Unicode Normalization Form C (ADR 0019), not starting with `~` (Herald's names of the standing sessions of apps without sessions, AP-5)."
          },
          "channels": {
            "type": ["array", "null"],
            "items": {"type": "string", "pattern": "^([A-Za-z0-9_:.@-]{1,200}|[A-Za-z0-9_:.@-]{1,199}:\\*)$"},
            "description": "Channel grants: exact channel names, or `prefix:*` for every channel starting with `prefix:` (e.g. `generation:*`)."
          },
          "ttl_seconds": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": 86400,
            "description": "Lifetime, 1-86400 s, written as an integer (`1e3` or `3600.0` is a 400 naming the field); default 3600."
          },
          "app": {
            "type": ["string", "null"],
            "pattern": "^[a-z0-9][a-z0-9-]{0,62}$",
            "description": "The app the token is for: `default` (the default) or a demo app dev mode set up (`demo-b`); another is 400 with `field: app`."
          }
        }
      },
      "DevToken": {
        "type": "object",
        "required": ["access_token", "token_type", "expires_at", "app", "apps"],
        "properties": {
          "access_token": {"type": "string", "description": "A JWT: HS256 for `default`, ES256 with an `app` claim for a demo app."},
          "token_type": {"type": "string", "const": "Bearer"},
          "expires_at": {"type": "integer", "description": "Unix seconds."},
          "app": {"type": "string", "description": "The app the token routes to."},
          "apps": {"type": "array", "items": {"type": "string"}, "description": "The apps dev tokens can be minted for in this run, `default` first."}
        },
        "additionalProperties": false
      }
    }
    """#
}
