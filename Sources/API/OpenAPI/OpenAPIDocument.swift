/// The OpenAPI 3.1 document of every route `HeraldAPI.router` registers (SPEC OP-7), served at
/// `GET /openapi.json`. `OpenAPIDocumentTests` fails when a route is missing here or a path here
/// has no route: extend it together with the routes (docs/api.md).
enum OpenAPIDocument {
    static let json: String = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "Herald",
        "version": "0.1.0",
        "summary": "Realtime invalidation streams (SSE and WebSocket), presence, and the push-device registry.",
        "description": "Herald's HTTP API (docs/api.md; stream protocol in docs/protocol.md). Every error is `{\"error\", \"message\"}` plus `field` for validation errors. `HEAD` is answered for every `GET` route; unknown paths are 404 `not_found`, other methods on a known path 405 `method_not_allowed` with `Allow`. Malformed HTTP is refused before routing (400, 408, 413, 431, 501, 505)."
      },
      "servers": [{"url": "/"}],
      "tags": [
        {"name": "operations", "description": "Health and this document."},
        {"name": "client", "description": "Apps and browsers, with an access token."},
        {"name": "devices", "description": "Push devices of the caller (DV-1 to DV-3)."},
        {"name": "compatibility", "description": "The routes of the seed apps (DV-5)."},
        {"name": "server", "description": "The app backend, with the server key: publishing, presence, sessions, jobs."},
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
              "404": {
                "description": "Not one of the caller's devices (`not_found`).",
                "content": {
                  "application/json": {
                    "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["not_found"]}}}]}
                  }
                }
              },
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
              "404": {
                "description": "No such job (`not_found`).",
                "content": {
                  "application/json": {
                    "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["not_found"]}}}]}
                  }
                }
              },
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
              "404": {
                "description": "Not in dev mode: the route does not exist (`not_found`).",
                "content": {
                  "application/json": {
                    "schema": {"allOf": [{"$ref": "#/components/schemas/Error"}, {"properties": {"error": {"enum": ["not_found"]}}}]}
                  }
                }
              },
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
                "type": ["string", "null"],
                "minLength": 1,
                "maxLength": 64,
                "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
                "not": {"enum": ["ready", "reset", "error", "shutdown", "subscribed", "unsubscribed", "pong", "refreshed"]},
                "description": "Event name (1-64 of `A-Z a-z 0-9 _ - . :`, not one of the protocol's own names); absent or null means `message`."
              },
              "data": {
                "description": "Any JSON value, null included; at most `HERALD_MAX_DATA_BYTES` (64 KiB) as compact JSON (413 `payload_too_large` above). Object keys are re-emitted sorted."
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
          }
        }
      }
    }
    """#
}
