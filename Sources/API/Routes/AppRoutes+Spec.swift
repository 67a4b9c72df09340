import Realtime

extension AppRoutes {
    /// The OpenAPI operations of the admin API of apps; `register(in:)` registers each with its spec.
    enum Spec {
        private static let appPath = OpenAPIParameter.inline(name: "app", location: "path", required: true, description: "The app id.",
                                                             schema: .json(#"{"type": "string"}"#))
        private static let conflict = OpenAPIResponse.json("The id, a server key or the token issuer is taken (`app_exists`, `server_key_taken`, `issuer_taken`), or the app is `default` (`app_from_environment`).",
                                                           .error(["app_exists", "server_key_taken", "issuer_taken", "app_from_environment"]))
        private static let propagation = ##"{"Herald-Propagation": {"$ref": "#/components/headers/HeraldPropagation"}}"##
        private static let secretKeyMissing = OpenAPIResponse.json("A secret was given and no `HERALD_SECRET_KEY` is configured, or storage is unavailable.",
                                                                   .error(["secret_key_missing", "storage_busy", "storage_read_only", "storage_unavailable"]))

        static let createApp = RouteSpec(
            .post, "/v1/apps", auth: .adminKey, operationID: "createApp",
            tags: ["apps"], summary: "Create an app",
            description: "A tenant with its own token verification, server keys, push credentials and payload options (AP-1, AP-2, ADR 0006). Every setting is checked, and every credential parsed, before anything is stored: a bad one is a 400 naming the field. Without `server_keys` one key is generated and answered once (`server_key`).",
            requestBody: .json(.ref("AppChange")),
            responses: [
                201: .json("The app, secrets shown as fingerprints; with `warning` (and `Herald-Propagation: failed`) when the other nodes were not told, or `unconfirmed` when some did not confirm it in time.", .ref("App"), headers: propagation),
                400: .invalidRequest,
                401: .unauthorized,
                409: conflict,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: secretKeyMissing,
            ])

        static let listApps = RouteSpec(
            .get, "/v1/apps", auth: .adminKey, operationID: "listApps",
            tags: ["apps"], summary: "Every app",
            description: "`default` (the environment's) first, then the stored apps by id.",
            responses: [
                200: .json("The apps, each with whether this node serves it (`loaded`).", .ref("AppList")),
                401: .unauthorized,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let getApp = RouteSpec(
            .get, "/v1/apps/{app}", auth: .adminKey, operationID: "getApp",
            tags: ["apps"], summary: "One app",
            parameters: [appPath],
            responses: [
                200: .json("The app, secrets shown as fingerprints, and whether this node serves it (`loaded`).", .ref("App")),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let updateApp = RouteSpec(
            .patch, "/v1/apps/{app}", auth: .adminKey, operationID: "updateApp",
            tags: ["apps"], summary: "Change an app",
            description: "The members given replace theirs; `server_keys` replaces the key set (rotation: send old and new, later only new). `null` clears a member (docs/api.md): `tokens.hs256_secret` is removed and tokens signed with it are refused at once (an app left without any token key accepts no access token); lists become empty; `push.*` removes a provider; refused (400 naming it): `server_keys` (1-10 keys), `tokens.user_claim`, `tokens` and `push` as wholes. Effective when answered, without a restart: new tokens and keys are checked with the new settings, and pushes use the new credentials.",
            parameters: [appPath],
            requestBody: .json(.ref("AppChange")),
            responses: [
                200: .json("The app; with `warning` (and `Herald-Propagation: failed`) when the other nodes were not told, or `unconfirmed` when some did not confirm it in time.", .ref("App"), headers: propagation),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                409: .json("A server key or the token issuer is taken (`server_key_taken`, `issuer_taken`), the app is `default` (`app_from_environment`), or stored secrets the change does not replace do not open with this server's `HERALD_SECRET_KEY` (`secret_unreadable`, `field` names the first; the message names them all: restart with their key in `HERALD_SECRET_KEY_PREVIOUS`, send them again, or delete the app).",
                           .error(["server_key_taken", "issuer_taken", "app_from_environment", "secret_unreadable"])),
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .json("A secret was given, or the app has sealed secrets, and no `HERALD_SECRET_KEY` is configured; or storage is unavailable.",
                           .error(["secret_key_missing", "storage_busy", "storage_read_only", "storage_unavailable"])),
            ])

        static let deleteApp = RouteSpec(
            .delete, "/v1/apps/{app}", auth: .adminKey, operationID: "deleteApp",
            tags: ["apps"], summary: "Delete an app and its data",
            description: "Removes its devices, sessions, notifications, deliveries, preferences, members, idempotency keys and its devices' jobs in one transaction, drops its providers and closes its streams (AP-3).",
            parameters: [appPath],
            responses: [
                200: .json("Deleted here, and the other nodes were not told (Redis unreachable): `Herald-Propagation: failed` and a `warning`; or told, and some did not confirm it in time: `Herald-Propagation: unconfirmed` and a `warning`.",
                           .ref("AppDeleted"), headers: propagation),
                204: .content("Deleted, on every node."),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                409: conflict,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
