extension OpenAPIComponents {
    /// Schemas of push devices, sessions, push jobs and direct pushes.
    static let devicesSchemas = #"""
    {
      "DeviceRegistration": {
        "type": "object",
        "additionalProperties": false,
        "description": "`token` is required, except for a browser (`web`, provider `webpush`) that sends its `subscription` instead.",
        "required": ["platform"],
        "properties": {
          "platform": {"type": "string", "enum": ["ios", "android", "web"]},
          "token": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4096,
            "pattern": "^[!-~]+$",
            "description": "The push token. APNs (the default provider on `ios`): an even number, 16-200, of hex digits (stored lower-case). FCM: 1-4096 printable ASCII characters. Expo: `ExponentPushToken[…]` or `ExpoPushToken[…]` (or, with `provider: expo`, a bare UUID); a token that starts like one but is not one (`ExponentPushToken[abc`, `ExponentPushToken[]`) is a 400 on `token`, whatever the provider. Web Push: the stored form `<endpoint>#p256dh=<base64url>&auth=<base64url>` (send `subscription` instead; the endpoint's scheme and host are stored lower-case, a default port dropped)."
          },
          "subscription": {
            "type": ["object", "null"],
            "description": "Web Push only (platform `web`, provider `webpush`): the browser's `PushSubscription.toJSON()`, stored as the token. Each field is checked; a 400 names `subscription.endpoint`, `subscription.keys.p256dh` or `subscription.keys.auth`. `expirationTime` and unknown members are ignored.",
            "required": ["endpoint", "keys"],
            "properties": {
              "endpoint": {"type": "string", "minLength": 1, "maxLength": 2048, "description": "The push service URL: https (http on a loopback host only with `HERALD_WEBPUSH_ALLOW_HTTP`, default in dev mode), no user info, no fragment, on a public host: a loopback, private, link-local, CGNAT, multicast or other special-purpose address (also IPv4-mapped or in short/hex/octal IPv4 forms), an IPv6 zone, a name without a dot, `localhost` or `*.localhost`, `*.localdomain`, `*.local`, `*.internal`, `*.home.arpa`, `*.test`, `*.invalid` is refused with 400 `endpoint_not_public` unless `HERALD_WEBPUSH_ALLOW_PRIVATE` (default in dev mode). A name that resolves to no public address is checked at each send: dead letter `endpoint_not_public`."},
              "expirationTime": {"type": ["number", "null"]},
              "keys": {
                "type": "object",
                "required": ["p256dh", "auth"],
                "properties": {
                  "p256dh": {"type": "string", "pattern": "^[A-Za-z0-9_-]{87}=?$", "description": "The browser's P-256 public key, 65 bytes uncompressed, base64url."},
                  "auth": {"type": "string", "pattern": "^[A-Za-z0-9_-]{22}(==)?$", "description": "The 16-byte auth secret, base64url."}
                }
              }
            }
          },
          "provider": {
            "type": ["string", "null"],
            "enum": ["apns", "fcm", "webpush", "expo", null],
            "description": "Who delivers to the token. Default: `expo` for an `ExponentPushToken[…]`/`ExpoPushToken[…]` on ios or android, else `apns` on ios, `fcm` on android, `webpush` on web. Allowed: ios apns|fcm|expo, android fcm|expo, web webpush|fcm. Another provider named for an Expo token is a 400."
          },
          "environment": {
            "type": ["string", "null"],
            "enum": ["sandbox", "production", null],
            "description": "APNs gateway; ios only (400 on other platforms and for Expo tokens). Default `production` on ios, except for Expo tokens (null)."
          },
          "installation_id": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 128,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$",
            "description": "The app installation's id; a token registered by another installation is refused (403 `installation_mismatch`). 1-128 characters, no control characters."
          },
          "locale": {
            "type": ["string", "null"],
            "minLength": 2,
            "maxLength": 35,
            "pattern": "^[A-Za-z]{2,3}([-_][A-Za-z]{3}){0,3}([-_][A-Za-z]{4})?([-_]([A-Za-z]{2}|[0-9]{3}))?([-_]([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*([-_][A-WY-Za-wy-z0-9]([-_][A-Za-z0-9]{2,8})+)*([-_][Xx]([-_][A-Za-z0-9]{1,8})+)?$",
            "description": "A BCP 47 language tag (`pt-BR`, `zh-Hant-TW`, `es-419`; `_` is read as `-`), well formed by RFC 5646 §2.1 (language, extlangs, script, region, variants, extensions, private use, in that order), normalised to the usual case."
          },
          "app_version": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 64,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$",
            "description": "The app's version. 1-64 characters, no control characters."
          },
          "device_name": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 128,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$",
            "description": "A name the user recognises. 1-128 characters, no control characters."
          }
        },
        "allOf": [
          {"anyOf": [{"required": ["token"]}, {"required": ["subscription"]}]},
          {"not": {"required": ["token", "subscription"]}},
          {
            "if": {"required": ["subscription"]},
            "then": {"properties": {"platform": {"const": "web"}, "provider": {"enum": ["webpush", null]}}}
          },
          {
            "if": {"required": ["platform"], "properties": {"platform": {"const": "ios"}}},
            "then": {"properties": {"provider": {"enum": ["apns", "fcm", null]}}}
          },
          {
            "if": {"required": ["platform"], "properties": {"platform": {"const": "android"}}},
            "then": {"properties": {"provider": {"enum": ["fcm", null]}, "environment": {"type": "null"}}}
          },
          {
            "if": {"required": ["platform"], "properties": {"platform": {"const": "web"}}},
            "then": {"properties": {"provider": {"enum": ["webpush", "fcm", null]}, "environment": {"type": "null"}}}
          },
          {
            "if": {
              "required": ["platform"],
              "properties": {"platform": {"const": "ios"}, "provider": {"enum": ["apns", null]}}
            },
            "then": {"properties": {"token": {"minLength": 16, "maxLength": 200, "pattern": "^([0-9A-Fa-f]{2})+$"}}}
          },
          {
            "if": {
              "required": ["platform"],
              "properties": {"platform": {"const": "web"}, "provider": {"enum": ["webpush", null]}}
            },
            "then": {"properties": {"token": {"pattern": "^[!-\\x22$-~]+#p256dh=[A-Za-z0-9_-]{87}=?&auth=[A-Za-z0-9_-]{22}(==)?$"}}}
          }
        ]
      },
      "Device": {
        "type": "object",
        "required": [
          "id",
          "platform",
          "provider",
          "token",
          "environment",
          "locale",
          "app_version",
          "device_name",
          "installation_id",
          "created_at",
          "last_seen_at",
          "current",
          "active"
        ],
        "properties": {
          "id": {"type": "string", "format": "uuid"},
          "platform": {"type": "string", "enum": ["ios", "android", "web"]},
          "provider": {"type": "string", "enum": ["apns", "fcm", "webpush", "expo"]},
          "token": {
            "type": "string",
            "description": "Whole in a registration answer; masked (first and last four characters) in lists."
          },
          "environment": {"type": ["string", "null"], "enum": ["sandbox", "production", null]},
          "locale": {"type": ["string", "null"]},
          "app_version": {"type": ["string", "null"]},
          "device_name": {"type": ["string", "null"]},
          "installation_id": {"type": ["string", "null"]},
          "created_at": {"$ref": "#/components/schemas/Timestamp"},
          "last_seen_at": {"$ref": "#/components/schemas/Timestamp"},
          "current": {"type": "boolean", "description": "Registered by the calling token's session."},
          "active": {"type": "boolean", "description": "Its session has neither ended nor expired: it gets pushes."}
        },
        "additionalProperties": false
      },
      "DeviceList": {
        "type": "object",
        "required": ["devices"],
        "properties": {"devices": {"type": "array", "items": {"$ref": "#/components/schemas/Device"}}},
        "additionalProperties": false
      },
      "LegacyDeviceRegistration": {
        "type": "object",
        "description": "Seed 003's registration. Unknown members are ignored.",
        "required": ["token", "platform"],
        "properties": {
          "token": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4096,
            "pattern": "^[!-~]+$",
            "description": "An FCM token on both platforms: 1-4096 printable ASCII characters; an `ExponentPushToken[…]`/`ExpoPushToken[…]` is registered as an Expo token, and one that only starts like it (`ExponentPushToken[abc`) is a 400."
          },
          "platform": {
            "type": "string",
            "enum": ["fcm", "apns"],
            "description": "Only the OS label: `fcm` = android, `apns` = ios."
          },
          "device_id": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 128,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$",
            "description": "The installation id: a token registered by another installation is refused (403 `forbidden`). 1-128 characters, no control characters."
          }
        }
      },
      "DeviceTokenRegistration": {
        "type": "object",
        "description": "Seed 002's registration (camelCase). Unknown members are ignored.",
        "required": ["token"],
        "properties": {
          "token": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4096,
            "pattern": "^[!-~]+$",
            "description": "An Expo push token (`ExponentPushToken[…]`/`ExpoPushToken[…]`, provider `expo`; one that only starts like it, `ExpoPushToken[x`, is a 400) or an FCM token (1-4096 printable ASCII characters)."
          },
          "platform": {"type": ["string", "null"], "enum": ["ios", "android", null], "description": "Default `android`."},
          "appVersion": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 64,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$",
            "description": "The app's version. 1-64 characters, no control characters."
          },
          "locale": {
            "type": ["string", "null"],
            "minLength": 2,
            "maxLength": 35,
            "pattern": "^[A-Za-z]{2,3}([-_][A-Za-z]{3}){0,3}([-_][A-Za-z]{4})?([-_]([A-Za-z]{2}|[0-9]{3}))?([-_]([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*([-_][A-WY-Za-wy-z0-9]([-_][A-Za-z0-9]{2,8})+)*([-_][Xx]([-_][A-Za-z0-9]{1,8})+)?$",
            "description": "A BCP 47 language tag (`pt-BR`, `zh-Hant-TW`, `es-419`; `_` is read as `-`), well formed by RFC 5646 §2.1 (language, extlangs, script, region, variants, extensions, private use, in that order), normalised to the usual case."
          }
        }
      },
      "DeviceTokenRemoval": {
        "type": "object",
        "description": "Unknown members are ignored.",
        "required": ["token"],
        "properties": {"token": {"type": "string", "description": "The token to forget; unknown tokens are not an error."}}
      },
      "SessionExpiry": {
        "type": "object",
        "additionalProperties": false,
        "required": ["expires_at"],
        "properties": {
          "expires_at": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": 253402300799,
            "description": "Whole unix seconds (up to 9999-12-31), or null to clear the expiry. Required, so `{}` cannot clear it by accident."
          }
        }
      },
      "Session": {
        "type": "object",
        "required": ["session_id", "user_id", "created_at", "last_seen_at", "expires_at", "ended_at", "active"],
        "properties": {
          "session_id": {"type": "string"},
          "user_id": {
            "type": "string",
            "description": "Empty for a session Herald only knows from `DELETE /v1/sessions/{sid}`."
          },
          "created_at": {"$ref": "#/components/schemas/Timestamp"},
          "last_seen_at": {"$ref": "#/components/schemas/Timestamp"},
          "expires_at": {"oneOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}]},
          "ended_at": {"oneOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}]},
          "active": {"type": "boolean", "description": "Neither ended nor expired."}
        },
        "additionalProperties": false
      },
      "SessionEnded": {
        "type": "object",
        "required": ["session_id", "ended", "devices_deleted"],
        "properties": {
          "session_id": {"type": "string"},
          "ended": {"type": "boolean", "const": true},
          "devices_deleted": {"type": "integer", "minimum": 0}
        },
        "additionalProperties": false
      },
      "Job": {
        "type": "object",
        "description": "A durable job (PU-5), e.g. one push delivery to one device.",
        "required": ["id", "kind", "state", "attempts", "run_at", "last_error", "created_at", "payload"],
        "properties": {
          "id": {
            "type": "string",
            "pattern": "^[1-9][0-9]*$",
            "description": "A positive 64-bit integer, as a string."
          },
          "kind": {"type": "string", "description": "What the job does, e.g. `push.deliver`."},
          "state": {
            "type": "string",
            "enum": ["queued", "leased", "done", "dead"],
            "description": "`queued` (due at `run_at`), `leased` (a worker has it), `done`, or `dead` (given up)."
          },
          "attempts": {"type": "integer", "minimum": 0, "description": "Attempts started so far."},
          "run_at": {"$ref": "#/components/schemas/Timestamp"},
          "last_error": {"type": ["string", "null"]},
          "created_at": {"$ref": "#/components/schemas/Timestamp"},
          "dead_provider": {"type": ["string", "null"], "description": "A dead job's push provider (`apns`, `fcm`, `webpush`, `expo`), when known; null otherwise. `POST /v1/jobs/retry` filters on it (`provider`)."},
          "dead_reason": {"type": ["string", "null"], "description": "A dead job's reason code: `last_error` up to its first `:` (`ServiceUnavailable`, `transport_error`, `provider_misconfigured`…); null unless dead. `POST /v1/jobs/retry` filters on it (`reason`)."},
          "payload": {"description": "The job's input (JSON)."}
        },
        "additionalProperties": false
      },
      "JobList": {
        "type": "object",
        "required": ["jobs", "next_cursor"],
        "properties": {
          "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}, "description": "Newest first."},
          "next_cursor": {
            "type": ["string", "null"],
            "pattern": "^[1-9][0-9]*$",
            "description": "Pass as `cursor` for the next page; null on the last page."
          }
        },
        "additionalProperties": false
      },
      "TestPushResult": {
        "type": "object",
        "required": ["device_id", "provider", "provider_message_id"],
        "properties": {
          "device_id": {"type": "string"},
          "provider": {"type": "string", "enum": ["apns", "fcm", "webpush", "expo"]},
          "provider_message_id": {
            "type": ["string", "null"],
            "description": "The provider's id for the message (APNs `apns-id`, FCM message name), when it gives one."
          }
        },
        "additionalProperties": false
      },
      "PushNotificationRequest": {
        "type": "object",
        "additionalProperties": false,
        "description": "An alert needs a `title` or a `body`. A push over its provider's 4096-byte payload (APNs's JSON, Web Push's 3993 bytes of JSON in its record, FCM's data keys and values with the title and body, Expo's message) is sent with its body, then if need be its title, cut to the longest run of whole characters that fits and ended with `…`; data is never cut, and a push whose data alone does not fit is dead-lettered `payload_too_large` (the limit depends on each device's provider, so the call is not refused for it).",
        "properties": {
          "kind": {
            "type": ["string", "null"],
            "enum": ["alert", "wakeup", null],
            "description": "Default `alert`. `wakeup` is a silent background push."
          },
          "title": {"type": ["string", "null"]},
          "subtitle": {"type": ["string", "null"]},
          "body": {"type": ["string", "null"]},
          "sound": {"$ref": "#/components/schemas/PushName"},
          "badge": {"type": ["integer", "null"], "format": "int64"},
          "data": {
            "type": ["object", "null"],
            "additionalProperties": {"type": "string"},
            "description": "String keys and values delivered to the app."
          },
          "priority": {
            "type": ["string", "null"],
            "enum": ["normal", "high", "urgent", null],
            "description": "Default `normal` for alerts, `high` for wakeups."
          },
          "ttl_seconds": {"type": ["integer", "null"], "minimum": 0, "maximum": 2419200, "description": "0 to 28 days."},
          "collapse_key": {"type": ["string", "null"], "minLength": 1, "maxLength": 64, "description": "1-64 characters (Unicode scalars) without control characters or a space at either end (it is sent as APNs's `apns-collapse-id` header; one past APNs's 64 bytes is sent as its first characters, `~` and 16 hex digits of a hash of the whole key, the same for the same key): pushes with the same key replace each other on the device (APNs `apns-collapse-id`, FCM `android.collapse_key` and `tag`, Web Push `Topic`, Expo `collapseId` and `tag`). Without one, the id drawn for this call (`push_…`, in each job's `payload.notification.notification_id`) is the collapse id, tag and Topic, never FCM's `collapse_key`, so a push resent after a crash replaces its first copy (ADR 0020)."},
          "thread_id": {"$ref": "#/components/schemas/PushName"},
          "android_channel_id": {"$ref": "#/components/schemas/PushName"}
        },
        "if": {"required": ["kind"], "properties": {"kind": {"const": "wakeup"}}},
        "else": {
          "anyOf": [
            {"required": ["title"], "properties": {"title": {"type": "string"}}},
            {"required": ["body"], "properties": {"body": {"type": "string"}}}
          ]
        }
      },
      "PushRequest": {
        "type": "object",
        "additionalProperties": false,
        "description": "Exactly one of `user_id` and `device_ids`.",
        "required": ["notification"],
        "properties": {
          "user_id": {"type": ["string", "null"], "description": "Every device of this user whose session is active."},
          "device_ids": {
            "type": ["array", "null"],
            "minItems": 1,
            "maxItems": 1000,
            "items": {"type": "string"},
            "description": "These devices (unknown ids are skipped silently)."
          },
          "notification": {"$ref": "#/components/schemas/PushNotificationRequest"}
        },
        "oneOf": [
          {"required": ["user_id"], "properties": {"user_id": {"type": "string"}}},
          {"required": ["device_ids"], "properties": {"device_ids": {"type": "array"}}}
        ]
      },
      "PushQueued": {
        "type": "object",
        "required": ["queued", "jobs", "skipped"],
        "properties": {
          "queued": {"type": "integer", "minimum": 0},
          "jobs": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["job_id", "device_id"],
              "properties": {"job_id": {"type": "string", "pattern": "^[1-9][0-9]*$"}, "device_id": {"type": "string"}},
              "additionalProperties": false
            }
          },
          "skipped": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["device_id", "reason"],
              "properties": {"device_id": {"type": "string"}, "reason": {"type": "string", "enum": ["session_inactive", "push_disabled", "not_found"]}},
              "additionalProperties": false
            }
          }
        },
        "additionalProperties": false
      }
    }
    """#
}
