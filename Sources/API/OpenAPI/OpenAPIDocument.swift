/// The OpenAPI 3.1 document of every route `HeraldAPI.router` registers (SPEC OP-7), served at
/// `GET /openapi.json`. `OpenAPIDocumentTests` fails when a route is missing here or a path here
/// has no route: extend it together with the routes (docs/api.md).
enum OpenAPIDocument {
    private static let coreJSON: String = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "Herald",
        "version": "0.1.0",
        "summary": "Realtime invalidation streams (SSE and WebSocket), presence, the push-device registry, and notifications (inbox, preferences, push planning).",
        "description": "Herald's HTTP API (docs/api.md; stream protocol in docs/protocol.md). Every error is `{\"error\", \"message\"}` plus `field` for validation errors. `HEAD` is answered for every `GET` route; unknown paths are 404 `not_found`, other methods on a known path 405 `method_not_allowed` with `Allow`. Malformed HTTP is refused before routing (400, 408, 413, 431, 501, 505)."
      },
      "servers": [{"url": "/"}],
      "tags": [
        {"name": "operations", "description": "Health and this document."},
        {"name": "client", "description": "Apps and browsers, with an access token."},
        {"name": "devices", "description": "Push devices of the caller (DV-1 to DV-3)."},
        {"name": "compatibility", "description": "The routes of the seed apps (DV-5)."},
        {"name": "server", "description": "The app backend, with the server key: publishing, presence, sessions, jobs."},
        {"name": "notifications", "description": "Notifications (NO-1 to NO-8): sending and delivery records (server key), the inbox and push preferences (access token), scope members (server key)."},
        {"name": "dev", "description": "Dev mode only (`HERALD_DEV=1`)."}
      ],
      "paths": {
        "/healthz": {
          "get": {
            "tags": ["operations"],
            "summary": "Liveness",
            "operationId": "health",
            "security": [],
            "responses": {
              "200": {
                "description": "The process serves requests.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}
              },
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/readyz": {
          "get": {
            "tags": ["operations"],
            "summary": "Readiness",
            "description": "Ready when the database takes a write and every event loop answers. `push` shows each provider: disabled, ok, or provider_misconfigured while the mass-deletion guard holds.",
            "operationId": "ready",
            "security": [],
            "responses": {
              "200": {
                "description": "Ready.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}
              },
              "503": {
                "description": "Not ready; `problems` says why.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}
              },
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/metrics": {
          "get": {
            "tags": ["operations"],
            "summary": "Prometheus metrics",
            "description": "Text exposition format 0.0.4: connections, streams by state, sessions, messages published and delivered, slow-consumer disconnects, HTTP responses by route and status, push jobs by state and the oldest due job's age, provider answers by outcome, provider latency histogram.",
            "operationId": "metrics",
            "security": [],
            "responses": {
              "200": {
                "description": "The metrics.",
                "content": {"text/plain": {"schema": {"type": "string"}}}
              },
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/openapi.json": {
          "get": {
            "tags": ["operations"],
            "summary": "This document",
            "operationId": "openapi",
            "security": [],
            "responses": {
              "200": {
                "description": "The OpenAPI 3.1 document of every route.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAPIDocument"}}}
              },
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/stream": {
          "get": {
            "tags": ["client"],
            "summary": "Open the SSE stream",
            "description": "Always includes the caller's personal channel `user:{sub}`. Browsers' EventSource cannot set headers: pass the token as `?access_token=`.",
            "operationId": "openStream",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {"$ref": "#/components/parameters/Channels"},
              {"$ref": "#/components/parameters/State"},
              {"$ref": "#/components/parameters/LastEventIDQuery"},
              {
                "name": "Last-Event-ID",
                "in": "header",
                "required": false,
                "description": "The last cursor the client received; resumes after it.",
                "schema": {"type": "string"}
              }
            ],
            "responses": {
              "200": {
                "description": "The stream (WHATWG server-sent events): `retry:`, then `ready`, optionally `reset` and retained messages, replayed and live messages, heartbeats (`: heartbeat`), and finally `error` (`slow_consumer`, `token_expired`, `session_ended`) or `shutdown`. See docs/protocol.md.",
                "content": {"text/event-stream": {"schema": {"$ref": "#/components/schemas/StreamEvent"}}},
                "headers": {"Cache-Control": {"schema": {"type": "string", "const": "no-cache"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "403": {"$ref": "#/components/responses/ForbiddenChannel"},
              "429": {
                "description": "The user already holds `HERALD_MAX_STREAMS_PER_USER` streams (`too_many_streams`), or the caller's IP address holds `HERALD_MAX_CONNECTIONS_PER_IP` connections (`too_many_connections`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["too_many_streams", "too_many_connections"]}}}
                      ]
                    }
                  }
                }
              },
              "431": {"$ref": "#/components/responses/HeaderTooLarge"}
            }
          }
        },
        "/v1/ws": {
          "get": {
            "tags": ["client"],
            "summary": "Open the WebSocket",
            "description": "An RFC 6455 opening handshake (`Upgrade: websocket`, `Connection: Upgrade`, version 13; no extensions or subprotocols). The access token comes on the upgrade (`Authorization: Bearer` or `?access_token=`; a bad token is a 401 and an ungranted channel a 403 before the upgrade) or, with no token on the upgrade, as the first message `{\"type\":\"auth\",\"access_token\":…}` within 5 s.",
            "operationId": "openWebSocket",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}, {}],
            "parameters": [
              {"$ref": "#/components/parameters/Channels"},
              {"$ref": "#/components/parameters/State"},
              {"$ref": "#/components/parameters/LastEventIDQuery"},
              {
                "name": "Sec-WebSocket-Key",
                "in": "header",
                "required": true,
                "description": "The base64 of 16 random bytes.",
                "schema": {"type": "string", "pattern": "^[A-Za-z0-9+/]{22}==$"}
              },
              {
                "name": "Sec-WebSocket-Version",
                "in": "header",
                "required": true,
                "schema": {"type": "string", "const": "13"}
              }
            ],
            "responses": {
              "101": {
                "description": "Switching Protocols: the connection is now a WebSocket carrying the JSON messages of docs/protocol.md.",
                "headers": {
                  "Upgrade": {"schema": {"type": "string", "const": "websocket"}},
                  "Connection": {"schema": {"type": "string"}},
                  "Sec-WebSocket-Accept": {"description": "base64(SHA-1(key + GUID)), RFC 6455.", "schema": {"type": "string"}}
                }
              },
              "400": {
                "description": "Not a WebSocket upgrade (`upgrade_required`: no `Upgrade: websocket` / `Connection: Upgrade`, not HTTP/1.1, or a bad `Sec-WebSocket-Key`), or a malformed `state` or channel name (`invalid_request`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["upgrade_required", "invalid_request"]}}}
                      ]
                    }
                  }
                }
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "403": {"$ref": "#/components/responses/ForbiddenChannel"},
              "426": {
                "description": "A `Sec-WebSocket-Version` other than 13 (`unsupported_websocket_version`).",
                "headers": {"Sec-WebSocket-Version": {"schema": {"type": "string", "const": "13"}}},
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["unsupported_websocket_version"]}}}
                      ]
                    }
                  }
                }
              },
              "429": {
                "description": "With a token on the upgrade: the user already holds `HERALD_MAX_STREAMS_PER_USER` streams (`too_many_streams`), answered before upgrading; or the caller's IP address holds `HERALD_MAX_CONNECTIONS_PER_IP` connections (`too_many_connections`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["too_many_streams", "too_many_connections"]}}}
                      ]
                    }
                  }
                }
              },
              "431": {"$ref": "#/components/responses/HeaderTooLarge"}
            }
          }
        },
        "/v1/me/sessions/current/state": {
          "put": {
            "tags": ["client"],
            "summary": "Report the app state of the caller's session",
            "description": "Sets the state on every live connection of the token's `sid` and counts as app-level life for the foreground lease.",
            "operationId": "setSessionState",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/StateRequest"}}}},
            "responses": {
              "200": {
                "description": "The state was set on every live connection of the session.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/StateResult"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "403": {"$ref": "#/components/responses/SessionRequired"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/me/acks": {
          "post": {
            "tags": ["client"],
            "summary": "Acknowledge received events",
            "operationId": "acknowledge",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AcksRequest"}}}},
            "responses": {
              "200": {
                "description": "Recorded (the session keeps its most recent 256 acks).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AcksResult"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "403": {"$ref": "#/components/responses/SessionRequired"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/channels/{name}/presence": {
          "get": {
            "tags": ["server"],
            "summary": "Who is connected to a channel",
            "operationId": "channelPresence",
            "security": [{"serverKey": []}],
            "parameters": [
              {
                "name": "name",
                "in": "path",
                "required": true,
                "description": "The channel.",
                "schema": {"$ref": "#/components/schemas/ChannelName"}
              }
            ],
            "responses": {
              "200": {
                "description": "The channel's connections, by user and session.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChannelPresence"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/users/{id}/sessions/live": {
          "get": {
            "tags": ["server"],
            "summary": "A user's sessions and live connections",
            "operationId": "liveSessions",
            "security": [{"serverKey": []}],
            "parameters": [
              {
                "name": "id",
                "in": "path",
                "required": true,
                "description": "The user id (`sub`).",
                "schema": {"type": "string", "minLength": 1}
              }
            ],
            "responses": {
              "200": {
                "description": "The user's sessions (an unknown user has none).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LiveSessions"}}}
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"}
            }
          }
        },
        "/v1/publish": {
          "post": {
            "tags": ["server"],
            "summary": "Publish a message",
            "operationId": "publish",
            "security": [{"serverKey": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PublishMessage"}}}},
            "responses": {
              "200": {
                "description": "Published.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PublishReceipt"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/publish/batch": {
          "post": {
            "tags": ["server"],
            "summary": "Publish several messages",
            "description": "Validated whole first: one bad message (`field` e.g. `messages[2].channel`) publishes nothing.",
            "operationId": "publishBatch",
            "security": [{"serverKey": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PublishBatch"}}}},
            "responses": {
              "200": {
                "description": "All published, receipts in order.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PublishBatchResult"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/me/devices": {
          "post": {
            "tags": ["devices"],
            "summary": "Register a push device",
            "description": "Upsert on (platform, token), bound to the token's session (`sid` required). An earlier device of the same session and platform is deleted.",
            "operationId": "registerDevice",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceRegistration"}}}
            },
            "responses": {
              "200": {
                "description": "An existing device (same platform and token) updated, and moved to the caller if it was another user's.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Device"}}},
                "links": {
                  "DeleteDevice": {
                    "operationId": "deleteDevice",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id deletes it."
                  },
                  "TestPush": {
                    "operationId": "testPush",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id sends it a test push."
                  }
                }
              },
              "201": {
                "description": "A new device.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Device"}}},
                "links": {
                  "DeleteDevice": {
                    "operationId": "deleteDevice",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id deletes it."
                  },
                  "TestPush": {
                    "operationId": "testPush",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id sends it a test push."
                  }
                }
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "403": {"$ref": "#/components/responses/DeviceForbidden"},
              "409": {"$ref": "#/components/responses/SessionConflict"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          },
          "get": {
            "tags": ["devices"],
            "summary": "The caller's devices",
            "operationId": "listDevices",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "responses": {
              "200": {
                "description": "Every device of the user, tokens masked.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceList"}}}
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/me/devices/{id}": {
          "delete": {
            "tags": ["devices"],
            "summary": "Delete one of the caller's devices",
            "description": "Another user's device is 404 too: its existence is never revealed.",
            "operationId": "deleteDevice",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {
                "name": "id",
                "in": "path",
                "required": true,
                "description": "The device id.",
                "schema": {"type": "string", "minLength": 1}
              }
            ],
            "responses": {
              "204": {"description": "Deleted."},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/me/devices/{id}/test": {
          "post": {
            "tags": ["devices"],
            "summary": "Send a test push to one of the caller's devices",
            "description": "A localized \"notifications are working\" push (DV-7), sent at once, bypassing the queue.",
            "operationId": "testPush",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {
                "name": "id",
                "in": "path",
                "required": true,
                "description": "The device id.",
                "schema": {"type": "string", "minLength": 1}
              }
            ],
            "responses": {
              "200": {
                "description": "The provider accepted the push.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestPushResult"}}}
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound", "description": "Not one of the caller's devices (`not_found`)."},
              "410": {
                "description": "The provider rejected the token as invalid; the device was removed (`push_token_invalid`, with `reason`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["push_token_invalid"]}}}]
                    }
                  }
                }
              },
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "502": {
                "description": "The provider did not accept the push (`push_provider_error`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["push_provider_error"]}}}]
                    }
                  }
                }
              },
              "503": {
                "description": "The device's provider has no credentials on this server (`push_not_configured`), or the database is busy (`database_busy`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["push_not_configured", "database_busy"]}}}
                      ]
                    }
                  }
                }
              }
            }
          }
        },
        "/v1/devices": {
          "post": {
            "tags": ["compatibility"],
            "summary": "Register a device (compatibility, seed 003)",
            "description": "Maps onto `POST /v1/me/devices` with provider `fcm`; `device_id` is the installation id.",
            "operationId": "registerLegacyDevice",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LegacyDeviceRegistration"}}}
            },
            "responses": {
              "204": {"description": "Registered."},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "403": {"$ref": "#/components/responses/DeviceForbidden"},
              "409": {"$ref": "#/components/responses/SessionConflict"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/devices/{token}": {
          "delete": {
            "tags": ["compatibility"],
            "summary": "Forget a device token (compatibility, seed 003)",
            "operationId": "deleteLegacyDevice",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {
                "name": "token",
                "in": "path",
                "required": true,
                "description": "The push token.",
                "schema": {"type": "string", "minLength": 1}
              }
            ],
            "responses": {
              "204": {"description": "Deleted, or the caller had no such token."},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/users/me/device-tokens": {
          "post": {
            "tags": ["compatibility"],
            "summary": "Register a device token (compatibility, seed 002)",
            "description": "Maps onto `POST /v1/me/devices` with provider `fcm`.",
            "operationId": "registerDeviceToken",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceTokenRegistration"}}}
            },
            "responses": {
              "200": {
                "description": "An existing device (same platform and token) updated, and moved to the caller if it was another user's.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Device"}}},
                "links": {
                  "DeleteDevice": {
                    "operationId": "deleteDevice",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id deletes it."
                  },
                  "TestPush": {
                    "operationId": "testPush",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id sends it a test push."
                  }
                }
              },
              "201": {
                "description": "A new device.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Device"}}},
                "links": {
                  "DeleteDevice": {
                    "operationId": "deleteDevice",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id deletes it."
                  },
                  "TestPush": {
                    "operationId": "testPush",
                    "parameters": {"id": "$response.body#/id"},
                    "description": "The device's id sends it a test push."
                  }
                }
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "403": {"$ref": "#/components/responses/DeviceForbidden"},
              "409": {"$ref": "#/components/responses/SessionConflict"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          },
          "delete": {
            "tags": ["compatibility"],
            "summary": "Forget a device token (compatibility, seed 002)",
            "operationId": "deleteDeviceToken",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceTokenRemoval"}}}
            },
            "responses": {
              "204": {"description": "Deleted, or the caller had no such token."},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/sessions/{sid}": {
          "delete": {
            "tags": ["server"],
            "summary": "End a session",
            "description": "Logout, password change, refresh-token reuse. A session Herald never saw is recorded as ended.",
            "operationId": "endSession",
            "security": [{"serverKey": []}],
            "parameters": [
              {
                "name": "sid",
                "in": "path",
                "required": true,
                "description": "The session id (the tokens' `sid`): 1-200 bytes of UTF-8.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 200}
              }
            ],
            "responses": {
              "200": {
                "description": "Ended: its devices are deleted, its tokens refused from now on (401 `session_ended`), its live streams closed.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SessionEnded"}}},
                "links": {
                  "SetSessionExpiry": {
                    "operationId": "setSessionExpiry",
                    "parameters": {"sid": "$response.body#/session_id"},
                    "description": "An ended session is known, so its expiry can be set."
                  }
                }
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          },
          "put": {
            "tags": ["server"],
            "summary": "Set a session's expiry",
            "description": "A session past its expiry keeps its devices but they get no pushes (`active: false`).",
            "operationId": "setSessionExpiry",
            "security": [{"serverKey": []}],
            "parameters": [
              {
                "name": "sid",
                "in": "path",
                "required": true,
                "description": "The session id (the tokens' `sid`): 1-200 bytes of UTF-8.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 200}
              }
            ],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SessionExpiry"}}}},
            "responses": {
              "200": {
                "description": "The session.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Session"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/push": {
          "post": {
            "tags": ["server"],
            "summary": "Queue a push to a user's or to listed devices",
            "operationId": "sendPush",
            "security": [{"serverKey": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PushRequest"}}}},
            "responses": {
              "202": {
                "description": "One durable `push.deliver` job per device with an active session; the others are listed as skipped.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PushQueued"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {
                "description": "No push provider has credentials on this server (`push_not_configured`, checked before the body), or the database is busy (`database_busy`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["push_not_configured", "database_busy"]}}}
                      ]
                    }
                  }
                }
              }
            }
          }
        },
        "/v1/jobs": {
          "get": {
            "tags": ["server"],
            "summary": "List jobs",
            "description": "Push deliveries are durable jobs (`push.deliver`, one per device). Dead letters by default.",
            "operationId": "listJobs",
            "security": [{"serverKey": []}],
            "parameters": [
              {
                "name": "state",
                "in": "query",
                "required": false,
                "description": "Default `dead`.",
                "schema": {"type": "string", "enum": ["queued", "leased", "done", "dead"]}
              },
              {
                "name": "limit",
                "in": "query",
                "required": false,
                "description": "Page size, 1-500; default 50.",
                "schema": {"type": "integer", "minimum": 1, "maximum": 500}
              },
              {
                "name": "cursor",
                "in": "query",
                "required": false,
                "description": "The `next_cursor` of the previous page.",
                "schema": {"type": "integer", "format": "int64", "minimum": 1, "maximum": 9223372036854775807}
              }
            ],
            "responses": {
              "200": {
                "description": "A page of jobs, newest first.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobList"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/jobs/{id}/retry": {
          "post": {
            "tags": ["server"],
            "summary": "Retry a dead job",
            "operationId": "retryJob",
            "security": [{"serverKey": []}],
            "parameters": [
              {
                "name": "id",
                "in": "path",
                "required": true,
                "description": "The job id.",
                "schema": {"type": "integer", "format": "int64", "minimum": 1, "maximum": 9223372036854775807}
              }
            ],
            "responses": {
              "200": {
                "description": "The job, queued again with fresh attempts, due now.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Job"}}}
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound", "description": "No such job (`not_found`)."},
              "409": {
                "description": "The job is not dead (`job_not_dead`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["job_not_dead"]}}}]
                    }
                  }
                }
              },
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/notifications": {
          "post": {
            "tags": ["notifications"],
            "summary": "Send a notification (the choke point)",
            "description": "For every recipient: stores the notification (the inbox, unless `persist` is false), publishes `notification.created` `{\"id\",\"kind\",\"scope\"}` on `user:{id}`, then plans a push per device of the user (NO-1, NO-2): skipped when the session ended or expired, the audience is excluded, the preferences turn the kind off or `push.policy` is `never`; suppressed when a foreground connection of the device's session received the event (`auto`); otherwise one `push.deliver` job (after `ack_window_ms` for `unless_acked`). The whole body is validated before anything is stored.",
            "operationId": "sendNotification",
            "security": [{"serverKey": []}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NotificationRequest"}}}
            },
            "responses": {
              "201": {
                "description": "Stored, broadcast and planned.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NotificationSent"}}},
                "links": {
                  "Deliveries": {
                    "operationId": "notificationDeliveries",
                    "parameters": {"id": "$response.body#/notifications/0/id"},
                    "description": "The first notification's delivery record."
                  }
                }
              },
              "200": {
                "description": "The same `idempotency_key` and the same body within 24 h: the first call's answer again; nothing is stored or sent twice.",
                "headers": {
                  "Idempotent-Replayed": {"required": true, "description": "Marks a replayed answer.", "schema": {"type": "string", "const": "true"}}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NotificationSent"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "409": {
                "description": "The `idempotency_key` was used with a different body in the last 24 h (`idempotency_key_reused`), or a call with it is still being processed (`idempotency_in_progress`; retry shortly).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["idempotency_key_reused", "idempotency_in_progress"]}}}
                      ]
                    }
                  }
                }
              },
              "413": {
                "description": "The body is over `HERALD_MAX_BODY_BYTES`, `data` is over 2048 bytes or `live.data` over `HERALD_MAX_DATA_BYTES` as compact JSON (`payload_too_large`, with `field`), or a scope rule reaches more than 10000 members (`too_many_recipients`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": ["payload_too_large", "too_many_recipients"]}}}
                      ]
                    }
                  }
                }
              },
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/notifications/{id}/deliveries": {
          "get": {
            "tags": ["notifications"],
            "summary": "A notification's delivery record",
            "description": "Every outcome per device and per live connection, oldest first, and the latest outcome of each (NO-8).",
            "operationId": "notificationDeliveries",
            "security": [{"serverKey": []}],
            "parameters": [{"$ref": "#/components/parameters/NotificationID"}],
            "responses": {
              "200": {
                "description": "The record.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NotificationDeliveries"}}}
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/deliveries/{id}/opened": {
          "post": {
            "tags": ["notifications"],
            "summary": "Record that the user opened a tracked push",
            "description": "The open beacon (NO-8, seed 004): the `delivery_id` a push carries in its data when the call set `track_opens`. Idempotent.",
            "operationId": "deliveryOpened",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {
                "name": "id",
                "in": "path",
                "required": true,
                "description": "The push's `delivery_id`.",
                "schema": {"type": "string", "minLength": 1}
              }
            ],
            "responses": {
              "200": {
                "description": "Recorded, or recorded before (`already_recorded`).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeliveryOpened"}}}
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound", "description": "No such delivery for the caller (`not_found`): another user's is never revealed."},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/users/{id}/reachability": {
          "get": {
            "tags": ["notifications"],
            "summary": "How a notification would reach a user now",
            "description": "Per live session and per device: `live_foreground`, `live_background`, `push_only` (an active session and a provider with credentials) or `unreachable`.",
            "operationId": "reachability",
            "security": [{"serverKey": []}],
            "parameters": [{"$ref": "#/components/parameters/UserIDPath"}],
            "responses": {
              "200": {
                "description": "The user's reachability (an unknown user is `unreachable`).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Reachability"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/me/notifications": {
          "get": {
            "tags": ["notifications"],
            "summary": "The caller's inbox",
            "description": "Newest first (NO-3). Notifications sent with `persist: false` are not listed.",
            "operationId": "listInbox",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {
                "name": "cursor",
                "in": "query",
                "required": false,
                "description": "The `next_cursor` of the previous page.",
                "schema": {"type": "integer", "format": "int64", "minimum": 1, "maximum": 9223372036854775807}
              },
              {
                "name": "limit",
                "in": "query",
                "required": false,
                "description": "Page size, 1-100; default 20.",
                "schema": {"type": "integer", "minimum": 1, "maximum": 100}
              },
              {
                "name": "unread",
                "in": "query",
                "required": false,
                "description": "`true`: unread notifications only. Default `false`.",
                "schema": {"type": "boolean"}
              },
              {
                "name": "locale",
                "in": "query",
                "required": false,
                "description": "The language of `title`, `subtitle` and `body` (NO-5); else the first tag of `Accept-Language`, else the catalog's default.",
                "schema": {"$ref": "#/components/schemas/LocaleTag"}
              },
              {
                "name": "Accept-Language",
                "in": "header",
                "required": false,
                "description": "Read when there is no `locale`: its first tag, when it is a well-formed tag (otherwise ignored).",
                "schema": {"type": "string"}
              }
            ],
            "responses": {
              "200": {
                "description": "A page of the inbox.",
                "headers": {"Herald-Cursor": {"$ref": "#/components/headers/HeraldCursor"}},
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InboxPage"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/me/notifications/unread-count": {
          "get": {
            "tags": ["notifications"],
            "summary": "The caller's unread count",
            "operationId": "unreadCount",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "responses": {
              "200": {
                "description": "Unread notifications in the inbox.",
                "headers": {"Herald-Cursor": {"$ref": "#/components/headers/HeraldCursor"}},
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UnreadCount"}}}
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/me/notifications/{id}/read": {
          "post": {
            "tags": ["notifications"],
            "summary": "Mark one notification read",
            "description": "The first time, `notification.read` `{\"ids\":[id],\"unread_count\":n}` is published on `user:{sub}` so the user's other sessions update; marking again keeps the first `read_at` and publishes nothing.",
            "operationId": "markRead",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [{"$ref": "#/components/parameters/NotificationID"}],
            "responses": {
              "200": {
                "description": "Read.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NotificationRead"}}}
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound", "description": "Not one of the caller's notifications (`not_found`): another user's is never revealed."},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/me/notifications/read-all": {
          "post": {
            "tags": ["notifications"],
            "summary": "Mark every notification read",
            "description": "When any was unread, `notification.read` `{\"all\":true,\"unread_count\":0}` is published on `user:{sub}`. No body.",
            "operationId": "markAllRead",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "responses": {
              "200": {
                "description": "All read.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NotificationsReadAll"}}}
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/me/push-preferences": {
          "get": {
            "tags": ["notifications"],
            "summary": "The caller's global push switch",
            "description": "Off silences every push to the user's devices, whatever the scoped preferences say (NO-4, seed 002).",
            "operationId": "getGlobalPushPreferences",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "responses": {
              "200": {"$ref": "#/components/responses/PushPreferences"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          },
          "put": {
            "tags": ["notifications"],
            "summary": "Set the caller's global push switch",
            "operationId": "putGlobalPushPreferences",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {"$ref": "#/components/requestBodies/PushPreferencesUpdate"},
            "responses": {
              "200": {"$ref": "#/components/responses/PushPreferences"},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/scopes/{scope}/me/push-preferences": {
          "get": {
            "tags": ["notifications"],
            "summary": "The caller's push preferences in a scope",
            "description": "Until saved, the catalog's defaults (`is_default: true`) (NO-4).",
            "operationId": "getPushPreferences",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [{"$ref": "#/components/parameters/ScopePath"}],
            "responses": {
              "200": {"$ref": "#/components/responses/PushPreferences"},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          },
          "put": {
            "tags": ["notifications"],
            "summary": "Set the caller's push preferences in a scope",
            "operationId": "putPushPreferences",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [{"$ref": "#/components/parameters/ScopePath"}],
            "requestBody": {"$ref": "#/components/requestBodies/PushPreferencesUpdate"},
            "responses": {
              "200": {"$ref": "#/components/responses/PushPreferences"},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/stores/{store_id}/me/push-preferences": {
          "get": {
            "tags": ["notifications", "compatibility"],
            "summary": "The caller's push preferences in a store (compatibility, seed 001)",
            "description": "The scope `store:{store_id}`.",
            "operationId": "getStorePushPreferences",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [{"$ref": "#/components/parameters/StoreID"}],
            "responses": {
              "200": {"$ref": "#/components/responses/PushPreferences"},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          },
          "put": {
            "tags": ["notifications", "compatibility"],
            "summary": "Set the caller's push preferences in a store (compatibility, seed 001)",
            "description": "The scope `store:{store_id}`.",
            "operationId": "putStorePushPreferences",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [{"$ref": "#/components/parameters/StoreID"}],
            "requestBody": {"$ref": "#/components/requestBodies/PushPreferencesUpdate"},
            "responses": {
              "200": {"$ref": "#/components/responses/PushPreferences"},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/scopes/{scope}/members": {
          "get": {
            "tags": ["notifications"],
            "summary": "A scope's members",
            "description": "By user id (NO-6).",
            "operationId": "listMembers",
            "security": [{"serverKey": []}],
            "parameters": [
              {"$ref": "#/components/parameters/ScopePath"},
              {
                "name": "cursor",
                "in": "query",
                "required": false,
                "description": "The `next_cursor` of the previous page (members after this user id).",
                "schema": {"type": "string"}
              },
              {
                "name": "limit",
                "in": "query",
                "required": false,
                "description": "Page size, 1-1000; default 100.",
                "schema": {"type": "integer", "minimum": 1, "maximum": 1000}
              }
            ],
            "responses": {
              "200": {
                "description": "A page of members (an unknown scope has none).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MemberList"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/scopes/{scope}/members/{user_id}": {
          "put": {
            "tags": ["notifications"],
            "summary": "Add or update a member of a scope",
            "description": "Replaces the member's permissions (NO-6); the recipient rules and `available_events` read them.",
            "operationId": "putMember",
            "security": [{"serverKey": []}],
            "parameters": [{"$ref": "#/components/parameters/ScopePath"}, {"$ref": "#/components/parameters/MemberUserID"}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MemberUpdate"}}}},
            "responses": {
              "200": {
                "description": "An existing member, updated.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Member"}}}
              },
              "201": {
                "description": "A new member.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Member"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          },
          "delete": {
            "tags": ["notifications"],
            "summary": "Remove a member from a scope",
            "operationId": "deleteMember",
            "security": [{"serverKey": []}],
            "parameters": [{"$ref": "#/components/parameters/ScopePath"}, {"$ref": "#/components/parameters/MemberUserID"}],
            "responses": {
              "204": {"description": "Removed."},
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "431": {"$ref": "#/components/responses/HeaderTooLarge"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/dev/token": {
          "post": {
            "tags": ["dev"],
            "summary": "Mint a demo access token (dev mode only)",
            "description": "Only when `HERALD_DEV=1`; otherwise 404. Signs an HS256 token with `HERALD_JWT_SECRET`.",
            "operationId": "devToken",
            "security": [],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DevTokenRequest"}}}
            },
            "responses": {
              "200": {
                "description": "The token.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DevToken"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "404": {"$ref": "#/components/responses/NotFound", "description": "Not in dev mode: the route does not exist (`not_found`)."},
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        }
      },
      "components": {
        "securitySchemes": {
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
            "description": "The same access token as `?access_token=`, for clients that cannot set headers (EventSource, browser WebSocket). Read only when the request has no `Authorization` header. A token in a URL may end up in logs: keep such tokens short-lived."
          },
          "serverKey": {"type": "http", "scheme": "bearer", "description": "`HERALD_SERVER_KEY`, for the app backend."}
        },
        "schemas": {
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
          "Readiness": {
            "type": "object",
            "required": ["status", "loops", "problems", "push"],
            "properties": {
              "status": {"type": "string", "enum": ["ready", "not_ready"]},
              "loops": {"type": "integer", "minimum": 0},
              "problems": {"type": "array", "items": {"type": "string"}},
              "push": {"type": "object", "additionalProperties": {"type": "string"}}
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
            "properties": {"openapi": {"type": "string", "const": "3.1.0"}, "info": {"type": "object"}, "paths": {"type": "object"}}
          },
          "PublishMessage": {
            "type": "object",
            "description": "One message as the app backend publishes it. Unknown members are ignored.",
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
              "retain": {"type": ["boolean", "null"], "description": "Keep as the channel's retained message for new subscribers."}
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
          "DevTokenRequest": {
            "type": "object",
            "required": ["user_id"],
            "properties": {
              "user_id": {
                "type": "string",
                "minLength": 1,
                "maxLength": 190,
                "pattern": "^[A-Za-z0-9_:.@-]{1,190}$",
                "description": "The token's `sub`: 1-190 characters of `A-Z a-z 0-9 _ - : . @` (it must name the channel `user:{sub}`)."
              },
              "session_id": {
                "type": ["string", "null"],
                "minLength": 1,
                "maxLength": 200,
                "description": "The token's `sid`: 1-200 bytes of UTF-8."
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
                "description": "Lifetime, 1-86400 s; default 3600."
              }
            }
          },
          "DevToken": {
            "type": "object",
            "required": ["access_token", "token_type", "expires_at"],
            "properties": {
              "access_token": {"type": "string", "description": "An HS256 JWT."},
              "token_type": {"type": "string", "const": "Bearer"},
              "expires_at": {"type": "integer", "description": "Unix seconds."}
            },
            "additionalProperties": false
          },
          "StateRequest": {"type": "object", "required": ["state"], "properties": {"state": {"$ref": "#/components/schemas/AppState"}}},
          "StateResult": {
            "type": "object",
            "required": ["session_id", "state", "connections"],
            "properties": {
              "session_id": {"type": "string"},
              "state": {"$ref": "#/components/schemas/AppState"},
              "connections": {"type": "integer", "minimum": 0, "description": "Live connections of the session whose state was set."}
            },
            "additionalProperties": false
          },
          "AcksRequest": {
            "type": "object",
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
          "DeviceRegistration": {
            "type": "object",
            "description": "Unknown members are ignored.",
            "required": ["platform", "token"],
            "properties": {
              "platform": {"type": "string", "enum": ["ios", "android", "web"]},
              "token": {
                "type": "string",
                "minLength": 1,
                "maxLength": 4096,
                "pattern": "^[!-~]+$",
                "description": "The push token. APNs (the default provider on `ios`): an even number, 16-200, of hex digits (stored lower-case). FCM and Web Push: 1-4096 printable ASCII characters."
              },
              "provider": {
                "type": ["string", "null"],
                "enum": ["apns", "fcm", "webpush", null],
                "description": "Who delivers to the token. Default: `apns` on ios, `fcm` on android, `webpush` on web. Allowed: ios apns|fcm, android fcm, web webpush|fcm."
              },
              "environment": {
                "type": ["string", "null"],
                "enum": ["sandbox", "production", null],
                "description": "APNs gateway; ios only (400 on other platforms). Default `production` on ios."
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
                "pattern": "^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$",
                "description": "A BCP 47 language tag (`pt-BR`, `zh-Hant-TW`, `es-419`; `_` is read as `-`), normalised to the usual case."
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
              "provider": {"type": "string", "enum": ["apns", "fcm", "webpush"]},
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
                "description": "An FCM token on both platforms: 1-4096 printable ASCII characters."
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
                "description": "The installation id (403 `installation_mismatch` rule). 1-128 characters, no control characters."
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
                "description": "An FCM token: 1-4096 printable ASCII characters."
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
                "pattern": "^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$",
                "description": "A BCP 47 language tag (`pt-BR`, `zh-Hant-TW`, `es-419`; `_` is read as `-`), normalised to the usual case."
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
            "description": "Unknown members are ignored.",
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
              "user_id": {"type": "string", "description": "Empty for a session Herald only knows from `DELETE /v1/sessions/{sid}`."},
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
              "error": {"type": "string", "enum": ["slow_consumer", "token_expired", "session_ended"]},
              "message": {"type": "string"}
            },
            "additionalProperties": false
          },
          "ShutdownEventData": {
            "type": "object",
            "required": ["reconnect"],
            "properties": {"reconnect": {"type": "boolean", "const": true}},
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
                  "data": {"contentMediaType": "application/json", "contentSchema": {"$ref": "#/components/schemas/ReadyEventData"}}
                }
              },
              {
                "properties": {
                  "event": {"const": "reset"},
                  "data": {"contentMediaType": "application/json", "contentSchema": {"$ref": "#/components/schemas/ResetEventData"}}
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
          "Job": {
            "type": "object",
            "description": "A durable job (PU-5), e.g. one push delivery to one device.",
            "required": ["id", "kind", "state", "attempts", "run_at", "last_error", "created_at", "payload"],
            "properties": {
              "id": {"type": "string", "pattern": "^[1-9][0-9]*$", "description": "A positive 64-bit integer, as a string."},
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
              "provider": {"type": "string", "enum": ["apns", "fcm", "webpush"]},
              "provider_message_id": {
                "type": ["string", "null"],
                "description": "The provider's id for the message (APNs `apns-id`, FCM message name), when it gives one."
              }
            },
            "additionalProperties": false
          },
          "PushNotificationRequest": {
            "type": "object",
            "description": "An alert needs a `title` or a `body`. Unknown members are ignored.",
            "properties": {
              "kind": {
                "type": ["string", "null"],
                "enum": ["alert", "wakeup", null],
                "description": "Default `alert`. `wakeup` is a silent background push."
              },
              "title": {"type": ["string", "null"]},
              "subtitle": {"type": ["string", "null"]},
              "body": {"type": ["string", "null"]},
              "sound": {"type": ["string", "null"]},
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
              "collapse_key": {"type": ["string", "null"], "maxLength": 64, "description": "At most 64 bytes of UTF-8."},
              "thread_id": {"type": ["string", "null"]},
              "android_channel_id": {"type": ["string", "null"]}
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
            "description": "Exactly one of `user_id` and `device_ids`. Unknown members are ignored.",
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
                  "properties": {"device_id": {"type": "string"}, "reason": {"type": "string", "enum": ["session_inactive"]}},
                  "additionalProperties": false
                }
              }
            },
            "additionalProperties": false
          },
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
          "LocaleTag": {
            "type": "string",
            "minLength": 2,
            "maxLength": 35,
            "pattern": "^[A-Za-z0-9]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$",
            "description": "A language tag such as `pt`, `en` or `pt-BR`: 2-3 letters or digits, then up to three `-` subtags of 1-8; at most 35 characters.",
            "examples": ["pt-BR"]
          },
          "PublishEventName": {
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
            "not": {"enum": ["ready", "reset", "error", "shutdown", "subscribed", "unsubscribed", "pong", "refreshed"]},
            "description": "An event name a publisher may use: 1-64 of `A-Z a-z 0-9 _ - . :`, not one of the protocol's own names."
          },
          "NotificationText": {
            "description": "One text for every language, or a map from language tag to text (NO-5). Each text is 1-1024 bytes of UTF-8. `{name}` placeholders are filled from `args`, then `data`; a placeholder without a value is 400, so the pattern admits texts without placeholders only (`{{` and `}}` are literal braces).",
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
          "NotificationTextTemplate": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1024,
            "pattern": "^([^{}]|\\{\\{|\\}\\})*$"
          },
          "NotificationRecipients": {
            "type": "object",
            "description": "Exactly one rule (NO-6). `user_ids`: these users (repeats count once). `scope` alone: the members holding the kind's required permission (every member when the kind requires none). `scope` + `permission`: the members holding it. `scope` + `assignee`: the assignee when a member holding the kind's permission (else listed in `skipped_recipients`); `assignee: null` means nobody is assigned: every member holding it. Unknown members are ignored.",
            "properties": {
              "user_ids": {"type": ["array", "null"], "minItems": 1, "maxItems": 1000, "items": {"$ref": "#/components/schemas/UserID"}},
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
            "examples": [{"user_ids": ["42"]}, {"scope": "store:17", "permission": "orders.view"}, {"scope": "store:17", "assignee": "42"}]
          },
          "LiveMessage": {
            "type": "object",
            "description": "A message for a resource channel, published once per call (not per recipient). Unknown members are ignored.",
            "required": ["channel"],
            "properties": {
              "channel": {"$ref": "#/components/schemas/ChannelName"},
              "event": {
                "oneOf": [{"$ref": "#/components/schemas/PublishEventName"}, {"type": "null"}],
                "description": "Absent or null means `message`."
              },
              "data": {"description": "Any JSON value (default null); at most `HERALD_MAX_DATA_BYTES` as compact JSON (413)."},
              "retain": {"type": ["boolean", "null"]}
            }
          },
          "NotificationPushOptions": {
            "type": "object",
            "description": "Unknown members are ignored.",
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
            "description": "One call for every recipient (NO-1). An alert needs a `title` or a `body` unless the catalog (`HERALD_CATALOG_PATH`) gives the kind texts. Unknown members are ignored.",
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
                        "enum": ["aps", "from", "message_type", "collapse_key", "notification", "cursor", "delivery_id", "kind", "notification_id"]
                      },
                      {"pattern": "^(google|gcm)\\."}
                    ]
                  }
                },
                "description": "Flat string data for the inbox and the push; at most 2048 bytes as compact JSON (413). Reserved keys (400): `aps`, `from`, `message_type`, `collapse_key`, `notification`, `cursor`, `delivery_id`, `google.*`, `gcm.*`, and the catalog's kind and notification id keys (default `kind` and `notification_id`)."
              },
              "collapse_key": {
                "type": ["string", "null"],
                "minLength": 1,
                "maxLength": 64,
                "description": "1-64 bytes of UTF-8; default the kind's (NO-7)."
              },
              "thread_id": {"type": ["string", "null"], "minLength": 1, "maxLength": 200, "description": "1-200 bytes of UTF-8."},
              "sound": {"type": ["string", "null"], "minLength": 1, "maxLength": 200, "description": "1-200 bytes of UTF-8."},
              "android_channel_id": {"type": ["string", "null"], "minLength": 1, "maxLength": 200, "description": "1-200 bytes of UTF-8."},
              "priority": {
                "type": ["string", "null"],
                "enum": ["normal", "high", "urgent", null],
                "description": "Default the kind's, else `normal`. `high` and `urgent` are Android high priority; `urgent` is iOS `time-sensitive`."
              },
              "ttl_seconds": {"type": ["integer", "null"], "minimum": 0, "maximum": 2419200, "description": "0 to 28 days; not with `expires_at`."},
              "expires_at": {
                "oneOf": [
                  {"type": "integer", "minimum": 1000000000000, "description": "Unix milliseconds (a value that looks like seconds is 400)."},
                  {"type": "string", "format": "date-time", "description": "RFC 3339, e.g. `2026-12-01T10:00:00Z`."},
                  {"type": "null"}
                ],
                "description": "At most 28 days ahead; not with `ttl_seconds`. Default: the providers' (one hour)."
              },
              "badge": {
                "oneOf": [{"type": "integer", "minimum": 0, "maximum": 99999}, {"type": "string", "const": "unread"}, {"type": "null"}],
                "description": "A number, or `unread`: the recipient's unread inbox count."
              },
              "persist": {"type": ["boolean", "null"], "description": "Default true: into the inbox. False: live event and push only."},
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
                "description": "1-255 bytes of UTF-8. The same key with the same body within 24 h answers the first result (200, `Idempotent-Replayed: true`)."
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
                    "push": {"type": "object", "required": ["policy"], "properties": {"policy": {"const": "unless_acked"}}}
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
              "push_suppressed": {"type": "integer", "minimum": 0, "description": "Devices not pushed because their session saw the event in the foreground."},
              "skipped": {"type": "integer", "minimum": 0, "description": "Devices not pushed for another reason (session, audience, preferences, policy, expiry, no credentials)."},
              "skipped_recipients": {
                "type": "array",
                "items": {
                  "type": "object",
                  "required": ["user_id", "reason"],
                  "properties": {"user_id": {"type": "string"}, "reason": {"type": "string", "enum": ["not_a_member", "missing_permission"]}},
                  "additionalProperties": false
                },
                "description": "An `assignee` who could not be reached."
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
              "session_id": {"type": ["string", "null"]},
              "provider_message_id": {"type": ["string", "null"], "description": "For `sent`: the APNs `apns-id` or FCM message name."},
              "job_id": {"type": ["string", "null"], "pattern": "^[1-9][0-9]*$", "description": "The `push.deliver` job (`GET /v1/jobs`)."},
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
              "planned": {"type": "boolean", "description": "The pushes have been planned (false only for a moment, or until recovery after a crash)."},
              "targets": {
                "type": "array",
                "description": "The latest outcome per device and per connection.",
                "items": {
                  "type": "object",
                  "required": ["session_id", "outcome", "at"],
                  "properties": {
                    "device_id": {"type": "string"},
                    "connection_id": {"type": "string"},
                    "session_id": {"type": ["string", "null"]},
                    "outcome": {"$ref": "#/components/schemas/DeliveryOutcome"},
                    "at": {"$ref": "#/components/schemas/Timestamp"}
                  },
                  "additionalProperties": false
                }
              },
              "deliveries": {"type": "array", "items": {"$ref": "#/components/schemas/DeliveryEntry"}, "description": "Every outcome, oldest first."}
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
                    "session_id": {"type": ["string", "null"]},
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
                    "provider": {"type": "string", "enum": ["apns", "fcm", "webpush"]},
                    "session_id": {"type": ["string", "null"]},
                    "reachability": {"type": "string", "enum": ["live_foreground", "live_background", "push_only", "unreachable"]},
                    "reason": {
                      "type": ["string", "null"],
                      "enum": ["session_inactive", "push_not_configured", null],
                      "description": "Why `unreachable`."
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
              "title": {"type": ["string", "null"], "description": "Rendered in the asked language; null when there is none or it can no longer be rendered."},
              "subtitle": {"type": ["string", "null"]},
              "body": {"type": ["string", "null"]},
              "locale": {"type": ["string", "null"], "description": "The tag the texts were taken from; null for a text that is the same in every language."},
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
              "notifications": {"type": "array", "items": {"$ref": "#/components/schemas/InboxItem"}, "description": "Newest first."},
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
            "description": "Unknown members are ignored.",
            "required": ["is_enabled"],
            "properties": {
              "is_enabled": {"type": "boolean"},
              "enabled_events": {
                "type": ["array", "null"],
                "maxItems": 500,
                "items": {"$ref": "#/components/schemas/Name"},
                "description": "The kinds to push; absent or null: the catalog's defaults. With a catalog loaded, a kind it lacks is 400."
              }
            }
          },
          "PushPreferences": {
            "type": "object",
            "required": ["scope", "is_enabled", "enabled_events", "available_events", "is_default"],
            "properties": {
              "scope": {"type": ["string", "null"], "description": "Null for the global switch."},
              "is_enabled": {"type": "boolean"},
              "enabled_events": {"type": "array", "items": {"type": "string"}, "description": "Sorted, each once."},
              "available_events": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Catalog kinds the user may get here: those whose permission their membership holds (every kind for the global switch)."
              },
              "is_default": {"type": "boolean", "description": "Nothing saved: `is_enabled` true and the kinds enabled by default."}
            },
            "additionalProperties": false
          },
          "MemberUpdate": {
            "type": "object",
            "description": "Unknown members are ignored.",
            "required": ["permissions"],
            "properties": {
              "permissions": {"type": "array", "maxItems": 200, "items": {"$ref": "#/components/schemas/Name"}}
            }
          },
          "Member": {
            "type": "object",
            "required": ["scope", "user_id", "permissions", "updated_at"],
            "properties": {
              "scope": {"$ref": "#/components/schemas/Scope"},
              "user_id": {"$ref": "#/components/schemas/UserID"},
              "permissions": {"type": "array", "items": {"$ref": "#/components/schemas/Name"}, "description": "Sorted, each once."},
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
              "next_cursor": {"type": ["string", "null"], "description": "Pass as `cursor` for the next page; null on the last page."}
            },
            "additionalProperties": false
          }
        },
        "responses": {
          "InvalidRequest": {
            "description": "Invalid input: 400 `invalid_request`, with `field` naming the offending field when there is one (bodies must be strict RFC 8259 JSON nesting at most 64 levels). Nothing changed.",
            "content": {
              "application/json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["invalid_request"]}}}]
                }
              }
            }
          },
          "InvalidToken": {
            "description": "The access token is missing, malformed, wrongly signed, expired or not yet valid (`invalid_token`), or its session has ended (`session_ended`).",
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
                "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["unauthorized"]}}}]}
              }
            }
          },
          "SessionRequired": {
            "description": "The access token has no `sid`, so it has no session (`session_required`).",
            "content": {
              "application/json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["session_required"]}}}]
                }
              }
            }
          },
          "SessionConflict": {
            "description": "The access token's `sid` names another user's session (`session_conflict`; nothing changes): a sid must be unique across users.",
            "content": {
              "application/json": {
                "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["session_conflict"]}}}]}
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
                "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["not_found"]}}}]}
              }
            }
          },
          "PayloadTooLarge": {
            "description": "The body is over `HERALD_MAX_BODY_BYTES` (1 MiB), or (publish) `data` is over `HERALD_MAX_DATA_BYTES` (`payload_too_large`, with `field`).",
            "content": {
              "application/json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["payload_too_large"]}}}]
                }
              }
            }
          },
          "UnsupportedMediaType": {
            "description": "A `Content-Type` other than `application/json` or `application/*+json` (`unsupported_media_type`). A body without `Content-Type` is read as JSON.",
            "content": {
              "application/json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["unsupported_media_type"]}}}]
                }
              }
            }
          },
          "DatabaseBusy": {
            "description": "The database stayed locked past its busy timeout (`database_busy`); retry shortly.",
            "content": {
              "application/json": {
                "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["database_busy"]}}}]}
              }
            }
          },
          "TooManyConnections": {
            "description": "More simultaneous connections from the caller's IP address than `HERALD_MAX_CONNECTIONS_PER_IP` (when set): answered on connect (`too_many_connections`), then closed.",
            "content": {
              "application/json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["too_many_connections"]}}}]
                }
              }
            }
          },
          "HeaderTooLarge": {
            "description": "The request line and headers are over `HERALD_MAX_HEADER_BYTES` (16 KiB): refused before routing (`header_too_large`), then closed.",
            "content": {
              "application/json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["header_too_large"]}}}]
                }
              }
            }
          },
          "ForbiddenChannel": {
            "description": "A requested channel is not granted by the token's `channels` claim (`forbidden_channel`; `channel` names it).",
            "content": {
              "application/json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["forbidden_channel"]}}}]
                }
              }
            }
          },
          "PushPreferences": {
            "description": "The preferences: the saved ones, else the defaults (`is_default: true`).",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PushPreferences"}}}
          }
        },
        "parameters": {
          "Channels": {
            "name": "channels",
            "in": "query",
            "required": false,
            "style": "form",
            "explode": true,
            "description": "Channels besides the personal `user:{sub}`, comma-separated and repeatable (at most 64). Each must be granted by the token's `channels` claim.",
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
        },
        "requestBodies": {
          "PushPreferencesUpdate": {
            "required": true,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PushPreferencesUpdate"}}}
          }
        },
        "headers": {
          "HeraldCursor": {
            "required": true,
            "description": "The stream position taken before the read: open the SSE stream with it as `Last-Event-ID` (or the WebSocket with `last_event_id`) to get every change after what this answer shows.",
            "schema": {"$ref": "#/components/schemas/Cursor"}
          }
        }
      }
    }
    """#
}

// MARK: - Web demo and its dev-only helpers (issue 7, OP-6; DemoRoutes)

extension OpenAPIDocument {
    /// The served document: `coreJSON` with `demoPaths` added at the start of its `paths`.
    static let json: String = {
        guard let paths = coreJSON.range(of: "\"paths\": {") else { preconditionFailure("the OpenAPI document has no paths") }
        return coreJSON.replacingCharacters(in: paths, with: "\"paths\": {\n" + demoPaths + ",")
    }()

    /// Path items of `DemoRoutes`: the web demo's files and the `/v1/dev/…` helpers it calls with
    /// the demo user's access token.
    static let demoPaths: String = #"""
        "/": {
          "get": {
            "tags": ["dev"],
            "summary": "The web demo (dev mode only)",
            "description": "Only when `HERALD_DEV=1`: `index.html` of `HERALD_WEB_DEMO_DIR`. Otherwise 404.",
            "operationId": "demoRoot",
            "security": [],
            "responses": {
              "200": {
                "description": "The demo page (`Cache-Control: no-cache`).",
                "content": {"text/html": {"schema": {"type": "string"}}}
              },
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/demo": {
          "get": {
            "tags": ["dev"],
            "summary": "The web demo (dev mode only)",
            "description": "`GET /demo/` (with or without the slash): the same page as `GET /`.",
            "operationId": "demoIndex",
            "security": [],
            "responses": {
              "200": {
                "description": "The demo page (`Cache-Control: no-cache`).",
                "content": {"text/html": {"schema": {"type": "string"}}}
              },
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/demo/{file}": {
          "get": {
            "tags": ["dev"],
            "summary": "A file of the web demo (dev mode only)",
            "description": "A plain file name of `HERALD_WEB_DEMO_DIR` (no directories) with a known extension: html, js, mjs, css, json, svg, png, ico, txt. Anything else is 404.",
            "operationId": "demoFile",
            "security": [],
            "parameters": [
              {
                "name": "file",
                "in": "path",
                "required": true,
                "description": "The file name, e.g. `herald-client.js`.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 100}
              }
            ],
            "responses": {
              "200": {
                "description": "The file, typed by its extension (`Cache-Control: no-cache`).",
                "content": {
                  "text/html": {"schema": {"type": "string"}},
                  "text/javascript": {"schema": {"type": "string"}},
                  "text/css": {"schema": {"type": "string"}},
                  "application/json": {},
                  "image/svg+xml": {"schema": {"type": "string"}},
                  "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
                  "image/x-icon": {"schema": {"type": "string", "contentMediaType": "image/x-icon"}},
                  "text/plain": {"schema": {"type": "string"}}
                }
              },
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/dev/notifications": {
          "post": {
            "tags": ["dev"],
            "summary": "Send a notification as the app backend would (dev mode only)",
            "description": "The demo page's stand-in for `POST /v1/notifications`, which needs the server key a browser must never hold. Takes the same body and answers the same way; `recipients` defaults to the caller.",
            "operationId": "devSendNotification",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "requestBody": {
              "required": true,
              "content": {
                "application/json": {
                  "schema": {
                    "type": "object",
                    "description": "The `POST /v1/notifications` body; `recipients` may be left out (then the caller).",
                    "required": ["kind"],
                    "properties": {
                      "recipients": {"type": "object"},
                      "kind": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$"},
                      "title": {"type": ["string", "object"]},
                      "body": {"type": ["string", "object"]},
                      "data": {"type": "object", "additionalProperties": {"type": "string"}},
                      "priority": {"type": "string", "enum": ["normal", "high", "urgent"]},
                      "persist": {"type": "boolean"},
                      "live": {"type": "object"},
                      "push": {"type": "object"},
                      "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 255}
                    }
                  }
                }
              }
            },
            "responses": {
              "201": {
                "description": "Stored, published and planned per device (as `POST /v1/notifications`).",
                "content": {
                  "application/json": {
                    "schema": {
                      "type": "object",
                      "required": ["notifications", "live_delivered", "push_queued", "push_suppressed", "skipped", "skipped_recipients"],
                      "properties": {
                        "notifications": {
                          "type": "array",
                          "items": {
                            "type": "object",
                            "required": ["id", "user_id", "event_id"],
                            "properties": {
                              "id": {"type": "string"},
                              "user_id": {"type": "string"},
                              "event_id": {"type": ["string", "null"]}
                            }
                          }
                        },
                        "live_delivered": {"type": "integer", "minimum": 0},
                        "push_queued": {"type": "integer", "minimum": 0},
                        "push_suppressed": {"type": "integer", "minimum": 0},
                        "skipped": {"type": "integer", "minimum": 0},
                        "skipped_recipients": {
                          "type": "array",
                          "items": {
                            "type": "object",
                            "required": ["user_id", "reason"],
                            "properties": {"user_id": {"type": "string"}, "reason": {"type": "string"}}
                          }
                        }
                      }
                    }
                  }
                }
              },
              "200": {
                "description": "A repeated `idempotency_key`: the first answer again, with `Idempotent-Replayed: true`.",
                "content": {"application/json": {"schema": {"type": "object"}}},
                "headers": {"Idempotent-Replayed": {"schema": {"type": "string", "const": "true"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "409": {
                "description": "The `idempotency_key` was used with another body (`idempotency_key_reused`) or is still in flight (`idempotency_in_progress`).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
              },
              "413": {"$ref": "#/components/responses/PayloadTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/dev/notifications/{id}/deliveries": {
          "get": {
            "tags": ["dev"],
            "summary": "A notification's delivery record (dev mode only)",
            "description": "The answer of `GET /v1/notifications/{id}/deliveries`, for the demo page: every outcome oldest first (`live_delivered`, `suppressed_foreground`, `queued`, `sent`, `failed`, …) and the latest per device and connection.",
            "operationId": "devNotificationDeliveries",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {"name": "id", "in": "path", "required": true, "description": "The notification id.", "schema": {"type": "string", "minLength": 1}}
            ],
            "responses": {
              "200": {
                "description": "The record.",
                "content": {
                  "application/json": {
                    "schema": {
                      "type": "object",
                      "required": ["notification_id", "user_id", "kind", "planned", "targets", "deliveries"],
                      "properties": {
                        "notification_id": {"type": "string"},
                        "user_id": {"type": "string"},
                        "kind": {"type": "string"},
                        "planned": {"type": "boolean"},
                        "targets": {"type": "array", "items": {"type": "object", "required": ["session_id", "outcome", "at"]}},
                        "deliveries": {"type": "array", "items": {"type": "object", "required": ["outcome", "at"]}}
                      }
                    }
                  }
                }
              },
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "503": {"$ref": "#/components/responses/DatabaseBusy"}
            }
          }
        },
        "/v1/dev/channels/{name}/presence": {
          "get": {
            "tags": ["dev"],
            "summary": "Who is connected to a channel (dev mode only)",
            "description": "The answer of `GET /v1/channels/{name}/presence`, for the demo page.",
            "operationId": "devChannelPresence",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {"name": "name", "in": "path", "required": true, "description": "The channel.", "schema": {"$ref": "#/components/schemas/ChannelName"}}
            ],
            "responses": {
              "200": {
                "description": "The channel's connections, by user and session.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChannelPresence"}}}
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {"$ref": "#/components/responses/NotFound"},
              "429": {"$ref": "#/components/responses/TooManyConnections"}
            }
          }
        },
        "/v1/dev/push-double/requests": {
          "get": {
            "tags": ["dev"],
            "summary": "What the provider double received (local push demo only)",
            "description": "With `HERALD_DEMO_PUSH=1 scripts/run`, Herald pushes to a local APNs/FCM double (Tests/ProviderDouble); this is its request log: per request `seq`, `provider`, `path`, `headers`, `body` (the payload), `jwt` (decoded), `status`, `outcome`, `notes`.",
            "operationId": "devPushDoubleRequests",
            "security": [{"accessToken": []}, {"accessTokenQuery": []}],
            "parameters": [
              {"name": "since", "in": "query", "required": false, "description": "Only requests after this `seq`.", "schema": {"type": "integer", "minimum": 0}},
              {
                "name": "provider",
                "in": "query",
                "required": false,
                "description": "Comma-separated `apns`, `fcm`, `oauth` (default `apns,fcm`).",
                "schema": {"type": "string", "pattern": "^(apns|fcm|oauth)(,(apns|fcm|oauth))*$"}
              }
            ],
            "responses": {
              "200": {
                "description": "The log, oldest first.",
                "content": {
                  "application/json": {
                    "schema": {
                      "type": "object",
                      "required": ["requests"],
                      "properties": {
                        "requests": {"type": "array", "items": {"type": "object", "required": ["seq", "provider", "path", "headers"]}}
                      },
                      "additionalProperties": false
                    }
                  }
                }
              },
              "400": {"$ref": "#/components/responses/InvalidRequest"},
              "401": {"$ref": "#/components/responses/InvalidToken"},
              "404": {
                "description": "The local push demo is not running (`push_demo_off`).",
                "content": {
                  "application/json": {
                    "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["push_demo_off", "not_found"]}}}]}
                  }
                }
              },
              "429": {"$ref": "#/components/responses/TooManyConnections"},
              "502": {
                "description": "The provider double did not answer (`push_double_unreachable`).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
              }
            }
          }
        }
    """#
}
