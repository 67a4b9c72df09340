/// The shared `components` of the OpenAPI document: what several operations refer to.
enum OpenAPIComponents {
    /// The `components` object.
    static let json: JSONValue = {
        var schemas: [(String, JSONValue)] = []
        for fragment in [commonSchemas, operationsSchemas, streamsSchemas, devicesSchemas, notificationsSchemas, usersSchemas, appsSchemas] {
            guard case .object(let members) = OpenAPIDocument.parse(fragment) else { preconditionFailure("schemas are not an object") }
            schemas += members
        }
        return .object([
            ("securitySchemes", OpenAPIDocument.parse(securitySchemes)),
            ("schemas", .object(schemas)),
            ("responses", OpenAPIResponse.withRequestID(OpenAPIDocument.parse(responses))),
            ("parameters", OpenAPIDocument.parse(parameters)),
            ("requestBodies", OpenAPIDocument.parse(requestBodies)),
            ("headers", OpenAPIDocument.parse(headers)),
        ])
    }()

    static let securitySchemes = #"""
    {
      "accessToken": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "An access token (HS256, RS256 or ES256) with `sub` and `exp`, usually `sid`, `channels` grants and `session_exp`."
      },
      "accessTokenQuery": {
        "type": "apiKey",
        "in": "query",
        "name": "access_token",
        "description": "The same access token as `?access_token=`, for clients that cannot set headers (EventSource, browser WebSocket). A request with an `Authorization` header too is refused with 400 `invalid_request` (`field: access_token`), even when the two are equal (RFC 6750 §2). A token in a URL may end up in logs: keep such tokens short-lived."
      },
      "serverKey": {"type": "http", "scheme": "bearer", "description": "`HERALD_SERVER_KEY` (the `default` app) or a server key of another app (`/v1/apps`), for the app backend: the key names the app."},
      "adminKey": {"type": "http", "scheme": "bearer", "description": "`HERALD_ADMIN_KEY`, for the admin API of apps."}
    }
    """#

    static let responses = #"""
    {
      "InvalidRequest": {
        "description": "Invalid input: 400 `invalid_request`, with `field` naming the offending field when there is one (bodies must be strict RFC 8259 JSON nesting at most 64 levels). Nothing changed.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["invalid_request"]}}}
              ]
            }
          }
        }
      },
      "InvalidToken": {
        "description": "The access token is missing, malformed, wrongly signed, expired or not yet valid, or its `sub` (1-195 of `A-Z a-z 0-9 _ - : . @`) or `sid` (1-200 bytes of UTF-8 in Unicode NFC, without NUL, not starting with `~`) is one Herald cannot serve (`invalid_token`, the message names the rule), or its session has ended (`session_ended`).",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["invalid_token", "session_ended"]}}}
              ]
            }
          }
        }
      },
      "Unauthorized": {
        "description": "The server key is missing, wrong or not configured (`unauthorized`).",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["unauthorized"]}}}]
            }
          }
        }
      },
      "SessionRequired": {
        "description": "The access token has no `sid`, so it has no session (`session_required`).",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["session_required"]}}}
              ]
            }
          }
        }
      },
      "SessionConflict": {
        "description": "The access token's `sid` names another user's session of the same app, ended or not (`session_conflict`; nothing changes): a sid must be unique across an app's users. Another app's session of the same `sid` is another session, never a conflict.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["session_conflict"]}}}
              ]
            }
          }
        }
      },
      "InvalidDeviceRegistration": {
        "description": "Invalid input: 400 `invalid_request` with `field`, or `endpoint_not_public` (field `subscription.endpoint`, or `token` for the stored form): a Web Push endpoint whose host is not on the public internet (a loopback, private, link-local, CGNAT, multicast or other special-purpose address, a local name), refused unless `HERALD_WEBPUSH_ALLOW_PRIVATE` (dev mode). Nothing changed.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["invalid_request", "endpoint_not_public"]}}}
              ]
            }
          }
        }
      },
      "DeviceForbidden": {
        "description": "The access token has no `sid` (`session_required`), or the token is registered to another installation (`installation_mismatch`; nothing changes).",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["session_required", "installation_mismatch"]}}}
              ]
            }
          }
        }
      },
      "NotFound": {
        "description": "Not found (`not_found`); also a path parameter that is not percent-encoded UTF-8 (no route matches).",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["not_found"]}}}]
            }
          }
        }
      },
      "PayloadTooLarge": {
        "description": "The body is over `HERALD_MAX_BODY_BYTES` (1 MiB), or (publish) `data` is over `HERALD_MAX_DATA_BYTES` (`payload_too_large`, with `field`).",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["payload_too_large"]}}}
              ]
            }
          }
        }
      },
      "UnsupportedMediaType": {
        "description": "A `Content-Type` other than `application/json` or `application/*+json` (`unsupported_media_type`). A body without `Content-Type` is read as JSON.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["unsupported_media_type"]}}}
              ]
            }
          }
        }
      },
      "StorageUnavailable": {
        "description": "Storage cannot take the request now (RL-2): it stayed locked past its busy timeout (`storage_busy`; retry shortly), the database file or its volume is read-only (`storage_read_only`), or it cannot be reached or Herald is shutting down (`storage_unavailable`; retry later). Nothing was stored, except after a stall: a `storage_unavailable` whose message says the database did not answer in time (after `HERALD_STORAGE_WAIT_SECONDS`) may still be stored when the database moves again, so retry it with the same `idempotency_key`. `/readyz` answers 503 while it lasts.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["storage_busy", "storage_read_only", "storage_unavailable"]}}}]
            }
          }
        }
      },
      "StorageFull": {
        "description": "The volume holding the database has no space left for this write (`storage_full`, RL-2): nothing was stored; `/readyz` answers 503 until space returns, and writes succeed again without a restart.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["storage_full"]}}}]
            }
          }
        }
      },
      "TooManyConnections": {
        "description": "More simultaneous connections from the caller's IP address than `HERALD_MAX_CONNECTIONS_PER_IP` (when set): answered on connect (`too_many_connections`), then closed.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["too_many_connections"]}}}
              ]
            }
          }
        }
      },
      "HeaderTooLarge": {
        "description": "The request line and headers are over `HERALD_MAX_HEADER_BYTES` (16 KiB): refused before routing (`header_too_large`), then closed.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["header_too_large"]}}}
              ]
            }
          }
        }
      },
      "RequestTimeout": {
        "description": "The request line, headers or body did not arrive within `HERALD_REQUEST_TIMEOUT_SECONDS`: refused before routing (`request_timeout`), then closed.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["request_timeout"]}}}
              ]
            }
          }
        }
      },
      "NotImplemented": {
        "description": "A `Transfer-Encoding` other than `chunked` (RFC 9112 §6.1): refused before routing (`not_implemented`, the message names the coding), then closed.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["not_implemented"]}}}
              ]
            }
          }
        }
      },
      "VersionNotSupported": {
        "description": "A request line naming an HTTP version other than 1.x (`HTTP/2.0`, `HTTP/0.9`): refused before routing (`http_version_not_supported`), then closed.",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["http_version_not_supported"]}}}
              ]
            }
          }
        }
      },
      "MethodNotAllowed": {
        "description": "A method the path does not serve (no operation of this document): 405 `method_not_allowed`, `Allow` listing the path's methods (`HEAD` beside every `GET`). Not listed under each operation, since an operation is the method the path serves.",
        "headers": {
          "Allow": {
            "required": true,
            "description": "The path's methods, comma-separated (`GET, HEAD, PUT`).",
            "schema": {"type": "string"}
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["method_not_allowed"]}}}
              ]
            }
          }
        }
      },
      "ForbiddenChannel": {
        "description": "A requested channel is not granted by the token's `channels` claim (`forbidden_channel`; `channel` names it).",
        "content": {
          "application/json": {
            "schema": {
              "allOf": [
                {"$ref": "#/components/schemas/Error"},
                {"properties": {"error": {"enum": ["forbidden_channel"]}}}
              ]
            }
          }
        }
      },
      "PushPreferences": {
        "description": "The preferences: the saved ones, else the defaults (`is_default: true`).",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PushPreferences"}}}
      }
    }
    """#

    static let parameters = #"""
    {
      "Channels": {
        "name": "channels",
        "in": "query",
        "required": false,
        "style": "form",
        "explode": true,
        "description": "Channels besides the personal `user:{sub}`, comma-separated and repeatable (at most 64 distinct: a name given twice counts once; empty entries such as `a,,b` are ignored). Each must be granted by the token's `channels` claim.",
        "schema": {
          "type": "array",
          "maxItems": 64,
          "items": {
            "type": "string",
            "pattern": "^[ \\t]*([A-Za-z0-9_:.@-]{1,200}[ \\t]*)?(,[ \\t]*([A-Za-z0-9_:.@-]{1,200}[ \\t]*)?)*$"
          }
        }
      },
      "State": {
        "name": "state",
        "in": "query",
        "required": false,
        "description": "Whether the app is visible; default `foreground`.",
        "schema": {"$ref": "#/components/schemas/AppState"}
      },
      "LastEventIDQuery": {
        "name": "last_event_id",
        "in": "query",
        "required": false,
        "description": "Resume after this cursor (same as the `Last-Event-ID` header). A cursor Herald did not issue gives a `reset`.",
        "schema": {"type": "string"}
      },
      "NotificationID": {
        "name": "id",
        "in": "path",
        "required": true,
        "description": "The notification id (`ntf_…`).",
        "schema": {"type": "string", "minLength": 1}
      },
      "UserIDPath": {
        "name": "id",
        "in": "path",
        "required": true,
        "description": "The user id (`sub`).",
        "schema": {"$ref": "#/components/schemas/UserID"}
      },
      "MemberUserID": {
        "name": "user_id",
        "in": "path",
        "required": true,
        "description": "The member's user id (`sub`).",
        "schema": {"$ref": "#/components/schemas/UserID"}
      },
      "ScopePath": {
        "name": "scope",
        "in": "path",
        "required": true,
        "description": "The scope, e.g. `store:17` (percent-encoding is optional for `:`).",
        "schema": {"$ref": "#/components/schemas/Scope"}
      },
      "StoreID": {
        "name": "store_id",
        "in": "path",
        "required": true,
        "description": "The store; the scope is `store:{store_id}`.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 194, "pattern": "^[A-Za-z0-9_.:-]{1,194}$"}
      }
    }
    """#

    static let requestBodies = #"""
    {
      "PushPreferencesUpdate": {
        "required": true,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PushPreferencesUpdate"}}}
      }
    }
    """#

    static let headers = #"""
    {
      "XRequestId": {
        "required": false,
        "description": "The request's id: the caller's `X-Request-Id` when it was 1-64 printable characters, else one Herald made. Herald logs it with the request (docs/operations.md), so a proxy's id lines up with Herald's log. Every answer to a request whose head was read carries it; a refusal of HTTP that could not be read (a malformed request line, 408, 431, 501, 505) may come without it.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 64}
      },
      "HeraldCursor": {
        "required": true,
        "description": "The stream position taken before the read: open the SSE stream with it as `Last-Event-ID` (or the WebSocket with `last_event_id`) to get every change after what this answer shows.",
        "schema": {"$ref": "#/components/schemas/Cursor"}
      },
      "HeraldPropagation": {
        "required": false,
        "description": "`failed`: the app change is stored and served by this node, but the other nodes of the cluster were not told (the control bus failed: Redis unreachable); they serve the app as it was until they restart or a later change of it reaches them. Repeat the change once Redis is back. `unconfirmed`: the other nodes were told, but not every one confirmed within the answer's wait (1 s) that it applied the change: one that cannot (another `HERALD_SECRET_KEY`, a setting it refuses) lists the app under `apps_not_loaded` on its `/readyz`; a slow one applies it when its reload ends. Absent when every node confirmed it (or there is one node).",
        "schema": {"type": "string", "enum": ["failed", "unconfirmed"]}
      }
    }
    """#

}

/// The shared responses, by name.
extension OpenAPIResponse {
    static let invalidRequest = OpenAPIResponse.shared("InvalidRequest")
    static let invalidToken = OpenAPIResponse.shared("InvalidToken")
    static let unauthorized = OpenAPIResponse.shared("Unauthorized")
    static let sessionRequired = OpenAPIResponse.shared("SessionRequired")
    static let sessionConflict = OpenAPIResponse.shared("SessionConflict")
    static let deviceForbidden = OpenAPIResponse.shared("DeviceForbidden")
    static let invalidDeviceRegistration = OpenAPIResponse.shared("InvalidDeviceRegistration")
    static let notFound = OpenAPIResponse.shared("NotFound")
    static let payloadTooLarge = OpenAPIResponse.shared("PayloadTooLarge")
    static let unsupportedMediaType = OpenAPIResponse.shared("UnsupportedMediaType")
    static let storageUnavailable = OpenAPIResponse.shared("StorageUnavailable")
    static let storageFull = OpenAPIResponse.shared("StorageFull")
    static let tooManyConnections = OpenAPIResponse.shared("TooManyConnections")
    static let headerTooLarge = OpenAPIResponse.shared("HeaderTooLarge")
    static let requestTimeout = OpenAPIResponse.shared("RequestTimeout")
    static let notImplemented = OpenAPIResponse.shared("NotImplemented")
    static let versionNotSupported = OpenAPIResponse.shared("VersionNotSupported")
    static let forbiddenChannel = OpenAPIResponse.shared("ForbiddenChannel")
    static let pushPreferences = OpenAPIResponse.shared("PushPreferences")
}
