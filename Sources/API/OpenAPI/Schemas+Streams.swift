extension OpenAPIComponents {
    /// Schemas of publishing, presence and the SSE/WebSocket events.
    static let streamsSchemas = #"""
    {
      "PublishMessage": {
        "type": "object",
        "additionalProperties": false,
        "description": "One message as the app backend publishes it.",
        "required": ["channel", "data"],
        "properties": {
          "channel": {"$ref": "#/components/schemas/ChannelName"},
          "event": {
            "oneOf": [{"$ref": "#/components/schemas/PublishEventName"}, {"type": "null"}],
            "description": "Absent or null means `message`."
          },
          "data": {
            "description": "Any JSON value, null included; at most `HERALD_MAX_DATA_BYTES` (64 KiB) as compact JSON (413 `payload_too_large` above). Carried as sent, compacted: key order, number spelling and string escapes are kept; a key given twice in the body is a 400."
          },
          "retain": {
            "type": ["boolean", "null"],
            "description": "Keep as the channel's retained message for new subscribers, until `HERALD_RETAINED_TTL_SECONDS` (default 86400) after this publish or `DELETE /v1/channels/{name}/retained` (ADR 0028)."
          }
        }
      },
      "PublishReceipt": {
        "type": "object",
        "required": ["id", "channel", "offset", "delivered"],
        "properties": {
          "id": {"$ref": "#/components/schemas/Cursor"},
          "channel": {"$ref": "#/components/schemas/ChannelName"},
          "offset": {"type": "integer", "minimum": 1, "description": "The message's 1-based position in its channel."},
          "delivered": {
            "type": "integer",
            "minimum": 0,
            "description": "Connections subscribed to the channel when it was published."
          }
        },
        "additionalProperties": false
      },
      "PublishBatch": {
        "type": "object",
        "additionalProperties": false,
        "required": ["messages"],
        "properties": {
          "messages": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {"$ref": "#/components/schemas/PublishMessage"},
            "description": "1-1000 messages, validated whole before any is published."
          }
        }
      },
      "PublishBatchResult": {
        "type": "object",
        "required": ["results"],
        "properties": {
          "results": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/PublishReceipt"},
            "description": "One receipt per message, in the same order."
          }
        },
        "additionalProperties": false
      },
      "StateRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["state"],
        "properties": {"state": {"$ref": "#/components/schemas/AppState"}}
      },
      "StateResult": {
        "type": "object",
        "required": ["session_id", "state", "connections"],
        "properties": {
          "session_id": {"type": "string"},
          "state": {"$ref": "#/components/schemas/AppState"},
          "connections": {
            "type": "integer",
            "minimum": 0,
            "description": "Live connections of the session whose state was set."
          }
        },
        "additionalProperties": false
      },
      "AcksRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["ids"],
        "properties": {
          "ids": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {
              "type": "string",
              "minLength": 1,
              "maxLength": 64,
              "description": "An event id (cursor), 1-64 bytes of UTF-8."
            }
          }
        }
      },
      "AcksResult": {
        "type": "object",
        "required": ["acknowledged"],
        "properties": {"acknowledged": {"type": "integer", "minimum": 1, "maximum": 1000}},
        "additionalProperties": false
      },
      "PresenceConnection": {
        "type": "object",
        "required": ["connection_id", "transport", "state", "lease_fresh", "lease_age_ms", "channels", "opened_at"],
        "properties": {
          "connection_id": {"type": "string"},
          "transport": {"type": "string", "enum": ["sse", "websocket"]},
          "state": {"$ref": "#/components/schemas/AppState"},
          "lease_fresh": {"type": "boolean"},
          "lease_age_ms": {"type": "integer", "minimum": 0},
          "channels": {"type": "array", "items": {"$ref": "#/components/schemas/ChannelName"}},
          "opened_at": {"$ref": "#/components/schemas/UnixMilliseconds"}
        },
        "additionalProperties": false
      },
      "PresenceSession": {
        "type": "object",
        "required": [
          "session_id",
          "user_id",
          "live",
          "state",
          "foreground",
          "last_change_at",
          "lease_age_ms",
          "last_ack_id",
          "last_ack_at",
          "connections"
        ],
        "properties": {
          "session_id": {"type": ["string", "null"], "description": "The tokens' `sid`; null for connections without one."},
          "user_id": {"type": "string"},
          "live": {"type": "boolean", "description": "The session has at least one connection."},
          "state": {
            "allOf": [{"$ref": "#/components/schemas/AppState"}],
            "description": "`foreground` when any connection reports foreground, regardless of the lease."
          },
          "foreground": {"type": "boolean", "description": "A connection is in the foreground with a fresh lease (RT-7a)."},
          "last_change_at": {"$ref": "#/components/schemas/UnixMilliseconds"},
          "lease_age_ms": {"type": "integer", "minimum": 0},
          "last_ack_id": {"type": ["string", "null"]},
          "last_ack_at": {"type": ["integer", "null"], "description": "Unix milliseconds."},
          "connections": {"type": "array", "items": {"$ref": "#/components/schemas/PresenceConnection"}}
        },
        "additionalProperties": false
      },
      "LiveSessions": {
        "type": "object",
        "required": ["user_id", "sessions"],
        "properties": {
          "user_id": {"type": "string"},
          "sessions": {"type": "array", "items": {"$ref": "#/components/schemas/PresenceSession"}}
        },
        "additionalProperties": false
      },
      "ChannelPresence": {
        "type": "object",
        "required": ["channel", "connections", "users"],
        "properties": {
          "channel": {"$ref": "#/components/schemas/ChannelName"},
          "connections": {"type": "integer", "minimum": 0},
          "users": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["user_id", "sessions"],
              "properties": {
                "user_id": {"type": "string"},
                "sessions": {
                  "type": "array",
                  "items": {"$ref": "#/components/schemas/PresenceSession"},
                  "description": "Each session lists only its connections on this channel."
                }
              },
              "additionalProperties": false
            }
          }
        },
        "additionalProperties": false
      },
      "ReadyEventData": {
        "type": "object",
        "required": ["connection_id", "session_id", "user_id", "channels"],
        "properties": {
          "connection_id": {"type": "string"},
          "session_id": {"type": ["string", "null"]},
          "user_id": {"type": "string"},
          "channels": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/components/schemas/ChannelName"},
            "description": "`user:{sub}` first, then the granted `?channels=`."
          }
        },
        "additionalProperties": false
      },
      "ResetEventData": {
        "type": "object",
        "required": ["channels"],
        "properties": {"channels": {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/ChannelName"}}},
        "additionalProperties": false
      },
      "StreamErrorEventData": {
        "type": "object",
        "required": ["error", "message"],
        "properties": {
          "error": {"type": "string", "enum": ["slow_consumer", "token_expired", "session_ended", "app_deleted"]},
          "message": {"type": "string"}
        },
        "additionalProperties": false
      },
      "ShutdownEventData": {
        "type": "object",
        "required": ["reconnect", "retry_ms"],
        "properties": {
          "reconnect": {"type": "boolean", "const": true},
          "retry_ms": {"type": "integer", "minimum": 0, "description": "Wait this long before reconnecting: the configured delay spread ± 50 % per connection, so clients do not all return at once. The event's block also sets `retry:` to it."}
        },
        "additionalProperties": false
      },
      "MessageEventData": {
        "type": "object",
        "required": ["channel", "offset", "data"],
        "properties": {
          "channel": {"$ref": "#/components/schemas/ChannelName"},
          "offset": {"type": "integer", "minimum": 1},
          "data": {"description": "The publisher's JSON value."}
        },
        "additionalProperties": false
      },
      "StreamEvent": {
        "type": "object",
        "description": "One server-sent event as an EventSource parser delivers it: `event` (the `event:` line), `data` (one line of compact JSON), `id` (the last `id:` seen: a cursor; retained messages carry none of their own). Comment lines (`: heartbeat`) and the `retry:` block are not events.",
        "required": ["event", "data"],
        "properties": {
          "event": {"type": "string"},
          "data": {"type": "string", "contentMediaType": "application/json"},
          "id": {"$ref": "#/components/schemas/Cursor"},
          "retry": {"type": "integer", "minimum": 0}
        },
        "anyOf": [
          {
            "properties": {
              "event": {"const": "ready"},
              "data": {
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": "#/components/schemas/ReadyEventData"}
              }
            }
          },
          {
            "properties": {
              "event": {"const": "reset"},
              "data": {
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": "#/components/schemas/ResetEventData"}
              }
            }
          },
          {
            "properties": {
              "event": {"const": "error"},
              "data": {
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": "#/components/schemas/StreamErrorEventData"}
              }
            }
          },
          {
            "properties": {
              "event": {"const": "shutdown"},
              "data": {
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": "#/components/schemas/ShutdownEventData"}
              }
            }
          },
          {
            "properties": {
              "event": {"$ref": "#/components/schemas/EventName"},
              "data": {
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": "#/components/schemas/MessageEventData"}
              }
            }
          }
        ]
      },
      "PublishEventName": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
        "not": {"enum": ["ready", "reset", "error", "shutdown", "subscribed", "unsubscribed", "pong", "refreshed"]},
        "description": "An event name a publisher may use: 1-64 of `A-Z a-z 0-9 _ - . :`, not one of the protocol's own names."
      },
      "LiveMessage": {
        "type": "object",
        "additionalProperties": false,
        "description": "A message for a resource channel, published once per call (not per recipient).",
        "required": ["channel"],
        "properties": {
          "channel": {"$ref": "#/components/schemas/ChannelName"},
          "event": {
            "oneOf": [{"$ref": "#/components/schemas/PublishEventName"}, {"type": "null"}],
            "description": "Absent or null means `message`."
          },
          "data": {
            "description": "Any JSON value (default null); at most `HERALD_MAX_DATA_BYTES` as compact JSON (413)."
          },
          "retain": {"type": ["boolean", "null"]}
        }
      }
    }
    """#
}
