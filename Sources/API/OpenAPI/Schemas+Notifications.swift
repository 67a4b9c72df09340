extension OpenAPIComponents {
    /// Schemas of notifications: sending, deliveries, reachability, inbox, preferences, members.
    static let notificationsSchemas = #"""
    {
      "NotificationText": {
        "description": "One text for every language, or a map from language tag to text (NO-5). A push takes the text of the device's `locale` (the tag, then the tag without its last subtags, then another text of its language: a tag naming a script only one of that script or of none), then the same for the user's language (`PUT /v1/users/{id}`), then the catalog's `default_locale`. Each text is 1-1024 characters (Unicode scalars); a push whose texts and data pass its provider's 4096-byte payload carries its body, then if need be its title, cut at a whole character and ended with `…` (data is never cut). `{name}` placeholders are filled from `args`, then `data`; a placeholder without a value is 400, so the pattern admits texts without placeholders only (`{{` and `}}` are literal braces).",
        "oneOf": [
          {"$ref": "#/components/schemas/NotificationTextTemplate"},
          {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 32,
            "propertyNames": {"$ref": "#/components/schemas/LocaleTag"},
            "additionalProperties": {"$ref": "#/components/schemas/NotificationTextTemplate"}
          }
        ],
        "examples": ["Pedido #77 pago", {"pt": "Pedido #77 pago", "en": "Order #77 paid"}]
      },
      "NotificationTextTemplate": {"type": "string", "minLength": 1, "maxLength": 1024, "pattern": "^([^{}]|\\{\\{|\\}\\})*$"},
      "NotificationRecipients": {
        "type": "object",
        "additionalProperties": false,
        "description": "Exactly one rule (NO-6). `user_ids`: these users (repeats count once). `scope` alone: the members holding the kind's required permission (every member when the kind requires none). `scope` + `permission`: the members holding it and the kind's permission. `scope` + `assignee`: the assignee when a member holding the kind's permission (else listed in `skipped_recipients`); `assignee: null` means nobody is assigned: every member holding it. The kind's permission holds for every recipient in a scope: `user_ids` with the call's `scope` reach only its members holding it (the others are listed in `skipped_recipients`).",
        "properties": {
          "user_ids": {
            "type": ["array", "null"],
            "minItems": 1,
            "maxItems": 1000,
            "items": {"$ref": "#/components/schemas/UserID"}
          },
          "scope": {"oneOf": [{"$ref": "#/components/schemas/Scope"}, {"type": "null"}]},
          "permission": {"oneOf": [{"$ref": "#/components/schemas/Name"}, {"type": "null"}]},
          "assignee": {"oneOf": [{"$ref": "#/components/schemas/UserID"}, {"type": "null"}]}
        },
        "oneOf": [
          {
            "required": ["user_ids"],
            "properties": {"user_ids": {"type": "array"}, "scope": {"type": "null"}, "permission": {"type": "null"}},
            "not": {"required": ["assignee"]}
          },
          {
            "required": ["scope"],
            "properties": {"user_ids": {"type": "null"}, "scope": {"type": "string"}},
            "if": {"required": ["assignee"]},
            "then": {"properties": {"permission": {"type": "null"}}}
          }
        ],
        "examples": [
          {"user_ids": ["42"]},
          {"scope": "store:17", "permission": "orders.view"},
          {"scope": "store:17", "assignee": "42"}
        ]
      },
      "NotificationPushOptions": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "policy": {
            "type": ["string", "null"],
            "enum": ["auto", "always", "never", "unless_acked", null],
            "description": "Default `auto`: no push to a device whose session has a foreground connection that received the event. `always`, `never`, or `unless_acked`: push after `ack_window_ms` unless the session acknowledged the event (WebSocket `ack` or `POST /v1/me/acks`)."
          },
          "ack_window_ms": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": 600000,
            "description": "Only with `unless_acked`; default 3000."
          },
          "type": {
            "type": ["string", "null"],
            "enum": ["alert", "wakeup", null],
            "description": "Default `alert`. `wakeup`: a silent push without texts whose data carries `cursor` (the event id)."
          }
        },
        "if": {"required": ["ack_window_ms"], "properties": {"ack_window_ms": {"type": "integer"}}},
        "then": {"required": ["policy"], "properties": {"policy": {"const": "unless_acked"}}}
      },
      "NotificationRequest": {
        "type": "object",
        "additionalProperties": false,
        "description": "One call for every recipient (NO-1). An alert needs a `title` or a `body` unless the catalog (`HERALD_CATALOG_PATH`) gives the kind texts.",
        "required": ["recipients", "kind"],
        "properties": {
          "recipients": {"$ref": "#/components/schemas/NotificationRecipients"},
          "kind": {"$ref": "#/components/schemas/Name"},
          "scope": {
            "oneOf": [{"$ref": "#/components/schemas/Scope"}, {"type": "null"}],
            "description": "Default: the recipients' `scope`. Preferences of this scope apply."
          },
          "title": {"oneOf": [{"$ref": "#/components/schemas/NotificationText"}, {"type": "null"}]},
          "body": {"oneOf": [{"$ref": "#/components/schemas/NotificationText"}, {"type": "null"}]},
          "args": {
            "type": ["object", "null"],
            "maxProperties": 32,
            "propertyNames": {"minLength": 1, "maxLength": 64},
            "additionalProperties": {"type": "string", "maxLength": 1024},
            "description": "Values for the `{name}` placeholders of the texts (the call's or the catalog's); they win over `data`. At most 32, names 1-64 characters, values at most 1024 characters, and 2048 bytes in all as compact JSON (413)."
          },
          "data": {
            "type": ["object", "null"],
            "additionalProperties": {"type": "string"},
            "propertyNames": {
              "minLength": 1,
              "not": {
                "anyOf": [
                  {
                    "enum": [
                      "aps",
                      "from",
                      "message_type",
                      "collapse_key",
                      "notification",
                      "cursor",
                      "delivery_id",
                      "kind",
                      "notification_id"
                    ]
                  },
                  {"pattern": "^(google|gcm)\\."}
                ]
              }
            },
            "description": "Flat string data for the inbox and the push; at most 2048 bytes as compact JSON (413). Reserved keys (400): `aps`, `from`, `message_type`, `collapse_key`, `notification`, `cursor`, `delivery_id`, `google`, `gcm`, `google.*`, `gcm.*`, and the catalog's kind and notification id keys (default `kind` and `notification_id`)."
          },
          "collapse_key": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 64,
            "description": "1-64 characters (Unicode scalars) without control characters or a space at either end (it is sent as APNs's `apns-collapse-id` header); default the kind's (NO-7). A key past APNs's 64 bytes (multi-byte characters, or a kind's key its template fills), or with a control character or a space at either end, is sent shortened: its first characters, `~` and 16 hex digits of a hash of the whole key, the same for the same key. Without one (and without the kind's `tag`), the notification's id is the collapse id / tag / Web Push Topic, so a push resent after a crash replaces its first copy instead of showing twice (ADR 0020); it never becomes FCM's `android.collapse_key`."
          },
          "thread_id": {"$ref": "#/components/schemas/PushName"},
          "sound": {"$ref": "#/components/schemas/PushName"},
          "android_channel_id": {"$ref": "#/components/schemas/PushName"},
          "priority": {
            "type": ["string", "null"],
            "enum": ["normal", "high", "urgent", null],
            "description": "Default the kind's, else `normal`. `high` and `urgent` are Android high priority; `urgent` is iOS `time-sensitive`."
          },
          "ttl_seconds": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": 2419200,
            "description": "0 to 28 days; not with `expires_at`."
          },
          "expires_at": {
            "oneOf": [
              {
                "type": "integer",
                "minimum": 1000000000000,
                "description": "Unix milliseconds (a value that looks like seconds is 400)."
              },
              {
                "type": "string",
                "format": "date-time",
                "description": "RFC 3339, e.g. `2026-12-01T10:00:00Z`."
              },
              {"type": "null"}
            ],
            "description": "At most 28 days ahead; not with `ttl_seconds`. Default: the providers' (one hour)."
          },
          "badge": {
            "oneOf": [
              {"type": "integer", "minimum": 0, "maximum": 99999},
              {"type": "string", "const": "unread"},
              {"type": "null"}
            ],
            "description": "A number, or `unread`: the recipient's unread inbox count."
          },
          "persist": {
            "type": ["boolean", "null"],
            "description": "Default true: into the inbox. False: live event and push only."
          },
          "live": {"oneOf": [{"$ref": "#/components/schemas/LiveMessage"}, {"type": "null"}]},
          "push": {"oneOf": [{"$ref": "#/components/schemas/NotificationPushOptions"}, {"type": "null"}]},
          "audience": {
            "oneOf": [{"$ref": "#/components/schemas/Name"}, {"type": "null"}],
            "description": "Default the kind's, else `everyone`; the catalog may exclude audiences from pushes (`skipped_audience`)."
          },
          "track_opens": {
            "type": ["boolean", "null"],
            "description": "Pushes carry `data.delivery_id` for `POST /v1/deliveries/{id}/opened`."
          },
          "idempotency_key": {
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": 255,
            "pattern": "^[^\\u0000]*$",
            "description": "1-255 bytes of UTF-8 without NUL (U+0000). The same key with the same body (members and `user_ids` in any order) within 24 h answers the first result (200, `Idempotent-Replayed: true`)."
          }
        },
        "allOf": [
          {
            "not": {
              "required": ["ttl_seconds", "expires_at"],
              "properties": {"ttl_seconds": {"type": "integer"}, "expires_at": {"type": ["integer", "string"]}}
            }
          },
          {
            "not": {
              "required": ["ttl_seconds", "push"],
              "properties": {
                "ttl_seconds": {"const": 0},
                "push": {
                  "type": "object",
                  "required": ["policy"],
                  "properties": {"policy": {"const": "unless_acked"}}
                }
              }
            }
          },
          {
            "if": {
              "required": ["push"],
              "properties": {"push": {"type": "object", "required": ["type"], "properties": {"type": {"const": "wakeup"}}}}
            },
            "else": {
              "anyOf": [
                {"required": ["title"], "properties": {"title": {"type": ["string", "object"]}}},
                {"required": ["body"], "properties": {"body": {"type": ["string", "object"]}}}
              ]
            }
          }
        ],
        "examples": [
          {
            "recipients": {"user_ids": ["42"]},
            "kind": "order.paid",
            "scope": "store:17",
            "title": {"pt": "Pedido #77 pago", "en": "Order #77 paid"},
            "data": {"order_id": "77"},
            "priority": "high"
          }
        ]
      },
      "NotificationID": {
        "type": "string",
        "pattern": "^ntf_[0-9a-z]{20}$",
        "description": "`ntf_` and 20 characters.",
        "examples": ["ntf_8k2m4q6s8v0x2z4b6d8f"]
      },
      "NotificationSent": {
        "type": "object",
        "required": ["notifications", "live_delivered", "push_queued", "push_suppressed", "skipped", "skipped_recipients"],
        "properties": {
          "notifications": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["id", "user_id", "event_id"],
              "properties": {
                "id": {"$ref": "#/components/schemas/NotificationID"},
                "user_id": {"type": "string"},
                "event_id": {
                  "oneOf": [{"$ref": "#/components/schemas/Cursor"}, {"type": "null"}],
                  "description": "The cursor of `notification.created` on `user:{id}`: resume a stream from it."
                }
              },
              "additionalProperties": false
            },
            "description": "One per recipient."
          },
          "live_delivered": {"type": "integer", "minimum": 0, "description": "Connections that received the event."},
          "push_queued": {"type": "integer", "minimum": 0, "description": "`push.deliver` jobs queued."},
          "push_suppressed": {
            "type": "integer",
            "minimum": 0,
            "description": "Devices not pushed because their session saw the event in the foreground."
          },
          "skipped": {
            "type": "integer",
            "minimum": 0,
            "description": "Devices not pushed for another reason (session, audience, preferences, policy, expiry, no credentials)."
          },
          "skipped_recipients": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["user_id", "reason"],
              "properties": {
                "user_id": {"type": "string"},
                "reason": {"type": "string", "enum": ["not_a_member", "missing_permission"]}
              },
              "additionalProperties": false
            },
            "description": "Users a rule named who are not reached (NO-6): an `assignee`, a `user_ids` entry of a scoped call, or a member a `permission` rule named, who is not a member of the scope or lacks the kind's permission."
          },
          "push_planning": {
            "type": "string",
            "const": "deferred",
            "description": "Only in a 202: the notifications are stored (and broadcast when `event_id` is set) but their pushes are not planned yet; recovery plans them (within 30 s of storage working again), and the counts above are 0 until then."
          }
        },
        "additionalProperties": false
      },
      "DeliveryOutcome": {
        "type": "string",
        "enum": [
          "live_delivered",
          "suppressed_foreground",
          "suppressed_acked",
          "skipped_preferences",
          "skipped_session",
          "skipped_audience",
          "skipped_policy",
          "expired",
          "queued",
          "sent",
          "retrying",
          "failed",
          "dead",
          "opened"
        ]
      },
      "DeliveryEntry": {
        "type": "object",
        "description": "One outcome for one device or connection.",
        "required": [
          "outcome",
          "device_id",
          "connection_id",
          "session_id",
          "provider_message_id",
          "job_id",
          "delivery_id",
          "detail",
          "at"
        ],
        "properties": {
          "outcome": {"$ref": "#/components/schemas/DeliveryOutcome"},
          "device_id": {"type": ["string", "null"]},
          "connection_id": {"type": ["string", "null"], "description": "For `live_delivered`."},
          "session_id": {"type": ["string", "null"], "description": "The token's `sid`; null without one (a device of an app whose tokens carry no session, AP-5)."},
          "provider_message_id": {"type": ["string", "null"], "description": "For `sent`: the APNs `apns-id` or FCM message name."},
          "job_id": {
            "type": ["string", "null"],
            "pattern": "^[1-9][0-9]*$",
            "description": "The `push.deliver` job (`GET /v1/jobs`)."
          },
          "delivery_id": {"type": ["string", "null"], "description": "With `track_opens`: the open beacon's id."},
          "detail": {"type": ["string", "null"], "description": "Why: a provider reason, a suppression cause."},
          "at": {"$ref": "#/components/schemas/Timestamp"}
        },
        "additionalProperties": false
      },
      "NotificationDeliveries": {
        "type": "object",
        "required": ["notification_id", "user_id", "kind", "planned", "targets", "deliveries"],
        "properties": {
          "notification_id": {"type": "string"},
          "user_id": {"type": "string"},
          "kind": {"type": "string"},
          "planned": {
            "type": "boolean",
            "description": "The pushes have been planned (false only for a moment, or until recovery after a crash)."
          },
          "targets": {
            "type": "array",
            "description": "The latest outcome per device and per connection.",
            "items": {
              "type": "object",
              "required": ["session_id", "outcome", "at"],
              "properties": {
                "device_id": {"type": "string"},
                "connection_id": {"type": "string"},
                "session_id": {"type": ["string", "null"], "description": "The token's `sid`; null without one (a device of an app whose tokens carry no session, AP-5)."},
                "outcome": {"$ref": "#/components/schemas/DeliveryOutcome"},
                "at": {"$ref": "#/components/schemas/Timestamp"}
              },
              "additionalProperties": false
            }
          },
          "deliveries": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/DeliveryEntry"},
            "description": "Every outcome, oldest first."
          }
        },
        "additionalProperties": false
      },
      "DeliveryOpened": {
        "type": "object",
        "required": ["delivery_id", "notification_id", "already_recorded"],
        "properties": {
          "delivery_id": {"type": "string"},
          "notification_id": {"type": "string"},
          "already_recorded": {"type": "boolean", "description": "An earlier call recorded the open."}
        },
        "additionalProperties": false
      },
      "Reachability": {
        "type": "object",
        "required": ["user_id", "reachability", "sessions", "devices"],
        "properties": {
          "user_id": {"type": "string"},
          "reachability": {
            "type": "string",
            "enum": ["live_foreground", "live_background", "push_only", "unreachable"],
            "description": "The best of the sessions and devices."
          },
          "sessions": {
            "type": "array",
            "description": "Sessions with live connections.",
            "items": {
              "type": "object",
              "required": ["session_id", "reachability", "connections", "has_device"],
              "properties": {
                "session_id": {"type": ["string", "null"], "description": "The token's `sid`; null without one (a device of an app whose tokens carry no session, AP-5)."},
                "reachability": {"type": "string", "enum": ["live_foreground", "live_background"]},
                "connections": {"type": "integer", "minimum": 0},
                "has_device": {"type": "boolean", "description": "A push device is registered by this session."}
              },
              "additionalProperties": false
            }
          },
          "devices": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["device_id", "platform", "provider", "session_id", "reachability", "reason"],
              "properties": {
                "device_id": {"type": "string"},
                "platform": {"type": "string", "enum": ["ios", "android", "web"]},
                "provider": {"type": "string", "enum": ["apns", "fcm", "webpush", "expo"]},
                "session_id": {"type": ["string", "null"], "description": "The token's `sid`; null without one (a device of an app whose tokens carry no session, AP-5)."},
                "reachability": {"type": "string", "enum": ["live_foreground", "live_background", "push_only", "unreachable"]},
                "reason": {
                  "type": ["string", "null"],
                  "enum": ["session_inactive", "push_disabled", "push_not_configured", null],
                  "description": "Why `unreachable`: the device's session ended (`session_inactive`), the user turned push off with the global switch (`push_disabled`, `PUT /v1/me/push-preferences` without a scope), or its provider has no credentials (`push_not_configured`)."
                }
              },
              "additionalProperties": false
            }
          }
        },
        "additionalProperties": false
      },
      "InboxItem": {
        "type": "object",
        "required": [
          "id",
          "kind",
          "scope",
          "title",
          "subtitle",
          "body",
          "locale",
          "data",
          "priority",
          "read",
          "read_at",
          "event_id",
          "created_at"
        ],
        "properties": {
          "id": {"type": "string"},
          "kind": {"type": "string"},
          "scope": {"type": ["string", "null"]},
          "title": {
            "type": ["string", "null"],
            "description": "Rendered in the asked language; the `kind` when neither title nor body can be rendered any more (the kind left the catalog); null when only the body has a text."
          },
          "subtitle": {"type": ["string", "null"]},
          "body": {"type": ["string", "null"]},
          "locale": {
            "type": ["string", "null"],
            "description": "The tag the texts were taken from; null for a text that is the same in every language."
          },
          "data": {"type": "object", "additionalProperties": {"type": "string"}},
          "priority": {"type": "string", "enum": ["normal", "high", "urgent"]},
          "read": {"type": "boolean"},
          "read_at": {"oneOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}]},
          "event_id": {
            "oneOf": [{"$ref": "#/components/schemas/Cursor"}, {"type": "null"}],
            "description": "The cursor of its `notification.created` event."
          },
          "created_at": {"$ref": "#/components/schemas/Timestamp"}
        },
        "additionalProperties": false
      },
      "InboxPage": {
        "type": "object",
        "required": ["notifications", "next_cursor"],
        "properties": {
          "notifications": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/InboxItem"},
            "description": "Newest first."
          },
          "next_cursor": {
            "type": ["string", "null"],
            "pattern": "^[1-9][0-9]*$",
            "description": "Pass as `cursor` for the next page; null on the last page."
          }
        },
        "additionalProperties": false
      },
      "UnreadCount": {
        "type": "object",
        "required": ["unread_count"],
        "properties": {"unread_count": {"type": "integer", "minimum": 0}},
        "additionalProperties": false
      },
      "NotificationRead": {
        "type": "object",
        "required": ["id", "read_at", "unread_count"],
        "properties": {
          "id": {"type": "string"},
          "read_at": {"$ref": "#/components/schemas/Timestamp"},
          "unread_count": {"type": "integer", "minimum": 0}
        },
        "additionalProperties": false
      },
      "NotificationsReadAll": {
        "type": "object",
        "required": ["marked", "unread_count"],
        "properties": {
          "marked": {"type": "integer", "minimum": 0, "description": "Notifications that were unread."},
          "unread_count": {"type": "integer", "const": 0}
        },
        "additionalProperties": false
      },
      "PushPreferencesUpdate": {
        "type": "object",
        "additionalProperties": false,
        "required": ["is_enabled"],
        "properties": {
          "is_enabled": {"type": "boolean"},
          "enabled_events": {
            "type": ["array", "null"],
            "maxItems": 500,
            "items": {"$ref": "#/components/schemas/Name"},
            "description": "The kinds to push; absent or null: the catalog's defaults (without a catalog: every kind); `[]`: none. With a catalog loaded, a kind it lacks is 400."
          }
        }
      },
      "PushPreferences": {
        "type": "object",
        "required": ["scope", "is_enabled", "enabled_events", "available_events", "is_default"],
        "properties": {
          "scope": {"type": ["string", "null"], "description": "Null for the global switch."},
          "is_enabled": {"type": "boolean"},
          "enabled_events": {
            "type": ["array", "null"],
            "items": {"type": "string"},
            "description": "The saved list, sorted, each once; with nothing (or null) saved, the kinds on by default with a catalog, and null (every kind is pushed) without one. PUT back unchanged, it keeps what is pushed."
          },
          "available_events": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Catalog kinds the user may get here: those whose permission their membership holds (every kind for the global switch)."
          },
          "is_default": {
            "type": "boolean",
            "description": "Nothing saved: `is_enabled` true and the kinds enabled by default."
          }
        },
        "additionalProperties": false
      },
      "MemberUpdate": {
        "type": "object",
        "additionalProperties": false,
        "required": ["permissions"],
        "properties": {"permissions": {"type": "array", "maxItems": 200, "items": {"$ref": "#/components/schemas/Name"}}}
      },
      "Member": {
        "type": "object",
        "required": ["scope", "user_id", "permissions", "updated_at"],
        "properties": {
          "scope": {"$ref": "#/components/schemas/Scope"},
          "user_id": {"$ref": "#/components/schemas/UserID"},
          "permissions": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/Name"},
            "description": "Sorted, each once."
          },
          "updated_at": {"$ref": "#/components/schemas/Timestamp"}
        },
        "additionalProperties": false
      },
      "MemberList": {
        "type": "object",
        "required": ["scope", "members", "next_cursor"],
        "properties": {
          "scope": {"$ref": "#/components/schemas/Scope"},
          "members": {"type": "array", "items": {"$ref": "#/components/schemas/Member"}, "description": "By user id."},
          "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null on the last page."
          }
        },
        "additionalProperties": false
      }
    }
    """#
}
