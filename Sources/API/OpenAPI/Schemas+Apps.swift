extension OpenAPIComponents {
    /// Schemas of the admin API of apps (AP-1, AP-2).
    static let appsSchemas = #"""
    {
      "SecretInfo": {
        "type": "object",
        "description": "What is shown of a secret: never its value.",
        "required": ["fingerprint", "set_at"],
        "properties": {
          "fingerprint": {"type": "string", "description": "First 16 hex digits of the value's SHA-256."},
          "set_at": {"type": "string", "format": "date-time"}
        }
      },
      "App": {
        "type": "object",
        "description": "An app (tenant). `default` (source `environment`) is shown with fewer members.",
        "required": ["id", "source"],
        "properties": {
          "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$"},
          "source": {"type": "string", "enum": ["api", "environment"]},
          "server_key_set": {"type": "boolean", "description": "`default` only: HERALD_SERVER_KEY is set."},
          "push_providers": {"type": "array", "items": {"type": "string"}, "description": "`default` only: providers with credentials."},
          "tokens": {
            "type": "object",
            "properties": {
              "hs256_secret": {"oneOf": [{"$ref": "#/components/schemas/SecretInfo"}, {"type": "null"}]},
              "public_keys": {"type": "array", "items": {"type": "string"}},
              "jwks": {"type": ["object", "null"]},
              "algorithms": {"type": "array", "items": {"type": "string"}},
              "user_claim": {"type": "string"},
              "session_claim": {"type": ["string", "null"]},
              "issuer": {"type": ["string", "null"]},
              "audience": {"type": ["string", "null"]}
            }
          },
          "server_keys": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["fingerprint", "created_at"],
              "properties": {"fingerprint": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"}}
            }
          },
          "server_key": {"type": "string", "description": "The generated server key, in the answer to a POST without `server_keys` only."},
          "loaded": {"type": "boolean", "description": "In the answers to GET only: whether the node that answered serves the app now (an app whose stored secrets do not open with its `HERALD_SECRET_KEY`, or whose settings no longer check, is stored but not loaded; `/readyz` lists it under `apps_not_loaded`)."},
          "not_loaded_reason": {"type": "string", "description": "With `loaded: false`, when the node knows why (the reason `/readyz` shows)."},
          "warning": {"type": "string", "description": "In the answer to a POST or PATCH only, when the change is stored and served by this node but the other nodes of the cluster were not told (Redis unreachable): they serve the app as it was until Redis is back, when this node tells them again and each reads every app again."},
          "cors_origins": {"type": "array", "items": {"type": "string"}},
          "catalog": {"type": ["object", "null"]},
          "payload": {"type": "object", "properties": {"root_key": {"type": ["string", "null"]}}},
          "exclusions": {"type": "object"},
          "default_locale": {"type": ["string", "null"]},
          "push": {
            "type": "object",
            "properties": {
              "apns": {"type": ["object", "null"]},
              "fcm": {"type": ["object", "null"]},
              "expo": {"type": ["object", "null"]},
              "webpush": {"type": ["object", "null"]}
            }
          },
          "created_at": {"type": "string", "format": "date-time"},
          "updated_at": {"type": "string", "format": "date-time"}
        }
      },
      "AppDeleted": {
        "type": "object",
        "description": "The answer to a DELETE whose deletion is committed and served by this node but was not told to the other nodes (Redis unreachable; `Herald-Propagation: failed`). A DELETE they were told of answers 204.",
        "required": ["id", "deleted", "warning"],
        "properties": {
          "id": {"type": "string"},
          "deleted": {"type": "boolean", "const": true},
          "warning": {"type": "string", "description": "The other nodes serve the app until Redis is back, when this node tells them again and each reads every app again."}
        }
      },
      "AppList": {
        "type": "object",
        "required": ["apps"],
        "properties": {"apps": {"type": "array", "items": {"$ref": "#/components/schemas/App"}}}
      },
      "AppChange": {
        "type": "object",
        "additionalProperties": false,
        "description": "A new app (`id` required) or a change (members given replace theirs; `null` clears one: a secret or provider is removed, a list becomes empty; `server_keys`, `tokens.user_claim`, `tokens` and `push` refuse `null`). Secrets (`tokens.hs256_secret`, `push.*` keys) are sealed at rest and never answered.",
        "properties": {
          "id": {"type": "string", "pattern": "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", "description": "1-63 of a-z 0-9 -, starting and ending with a letter or digit (a DNS label, RFC 1123)."},
          "tokens": {
            "type": "object",
            "additionalProperties": false,
            "description": "Cannot be `null` as a whole: its members change (and clear) one by one.",
            "properties": {
              "hs256_secret": {"type": ["string", "null"], "minLength": 16, "description": "`null` removes the secret: tokens signed with it are refused."},
              "public_keys": {"type": ["array", "null"], "maxItems": 100, "items": {"type": "string"}, "description": "`null`: none."},
              "jwks": {"type": ["object", "null"]},
              "algorithms": {"type": ["array", "null"], "maxItems": 100, "items": {"type": "string", "enum": ["HS256", "RS256", "ES256"]}, "description": "`null` or empty: those of the keys."},
              "user_claim": {"type": "string", "minLength": 1, "description": "Cannot be `null`."},
              "session_claim": {"type": ["string", "null"], "minLength": 1},
              "issuer": {"type": ["string", "null"], "minLength": 1, "maxLength": 1024, "pattern": "^[^\\u0000]*$", "description": "Without NUL (U+0000)."},
              "audience": {"type": ["string", "null"], "minLength": 1, "maxLength": 1024, "pattern": "^[^\\u0000]*$", "description": "Without NUL (U+0000)."}
            }
          },
          "server_keys": {"type": "array", "minItems": 1, "maxItems": 10, "description": "Cannot be `null`: an app has 1-10 keys.", "items": {"type": "string", "minLength": 16, "maxLength": 256, "pattern": "^[^ ]+$"}},
          "cors_origins": {"type": ["array", "null"], "maxItems": 100, "items": {"type": "string"}, "description": "Origins as browsers send them (`https://app.example`, `http://localhost:3000`: lower case, no path, no default port), or `*`. `null`: none."},
          "catalog": {"type": ["object", "null"]},
          "payload": {"type": ["object", "null"], "additionalProperties": false, "properties": {"root_key": {"type": ["string", "null"]}}},
          "exclusions": {
            "type": ["object", "null"],
            "additionalProperties": false,
            "properties": {
              "audiences": {"type": ["array", "null"], "maxItems": 100, "items": {"type": "string"}},
              "kinds": {"type": ["array", "null"], "maxItems": 100, "items": {"type": "string"}},
              "data_prefixes": {"type": ["array", "null"], "maxItems": 100, "items": {"type": "object", "required": ["key", "prefix"], "properties": {"key": {"type": "string"}, "prefix": {"type": "string"}}}}
            }
          },
          "default_locale": {"type": ["string", "null"]},
          "push": {
            "type": "object",
            "additionalProperties": false,
            "description": "Cannot be `null` as a whole: `null` for one provider removes its credentials.",
            "properties": {
              "apns": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["key_p8", "key_id", "team_id", "topic"], "additionalProperties": false,
                "properties": {"key_p8": {"type": "string"}, "key_id": {"type": "string"}, "team_id": {"type": "string"}, "topic": {"type": "string"}}}]},
              "fcm": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["service_account"], "additionalProperties": false,
                "properties": {"service_account": {"type": ["object", "string"]}, "project_id": {"type": ["string", "null"]}}}]},
              "expo": {"oneOf": [{"type": "null"}, {"type": "object", "additionalProperties": false,
                "description": "`{}` or `{\"access_token\": null}`: Expo without an access token (a project without enhanced push security).",
                "properties": {"access_token": {"type": ["string", "null"]}}}]},
              "webpush": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["vapid_private_key", "subject"], "additionalProperties": false,
                "properties": {"vapid_private_key": {"type": "string"}, "subject": {"type": "string"}, "public_key": {"type": ["string", "null"]}}}]}
            }
          }
        }
      }
    }
    """#
}
