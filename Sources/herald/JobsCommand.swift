import Foundation
import HeraldCore
import StoragePostgres
import StorageSQLite

/// `herald jobs retry`: the bulk retry of dead letters (`POST /v1/jobs/retry`) straight against
/// the database (`HERALD_DATABASE`), for an operator after a provider outage or a credentials fix,
/// with or without a running server. Prints `{"retried": n}`; a running server's worker sends the
/// jobs at its next poll, a stopped one at its next start. One app's jobs at a time (`--app`,
/// default `default`), as one server key retries its own app's only (ADR 0006). It never
/// migrates: a database not at exactly this build's schema version is refused (exit 4).
///
/// ```
/// herald jobs retry --provider apns --reason ServiceUnavailable --since 2026-01-01T10:00:00Z --until 2026-01-01T11:00:00Z
/// herald jobs retry --app chat --provider fcm
/// ```
enum JobsCommand {
    static let usageText = """
        usage: herald jobs retry [--app APP] [--provider apns|fcm|webpush|expo] [--reason CODE] [--since TIME] [--until TIME] [--kind KIND]
          APP is the app whose dead jobs are retried (default: default).
          TIME is RFC 3339 (2026-01-01T10:00:00Z) or unix milliseconds; --until is exclusive.
          CODE is a dead job's dead_reason (GET /v1/jobs?state=dead), e.g. ServiceUnavailable, UNAVAILABLE, transport_error.
        """

    /// The `herald jobs` commands, listed when none (or an unknown one) is named.
    static let commandsText = """
        usage: herald jobs COMMAND [OPTIONS]
          commands:
            retry   queue dead jobs again (POST /v1/jobs/retry against HERALD_DATABASE)
        """

    /// The exit status when the database is not at exactly this build's schema version: it runs
    /// beside a server without its lock (ADR 0017), so it never migrates (docs/operations.md).
    static let schemaMismatchExitStatus: Int32 = 4

    /// - Returns: the exit code: 0 done, 1 the database failed (or standard output refused the
    ///   answer, the jobs retried all the same), 2 bad arguments or settings,
    ///   4 the schema is not this build's (`schemaMismatchExitStatus`; nothing changed).
    static func run(arguments: [String]) -> Int32 {
        guard arguments.first == "retry" else {
            // Not `usage`: no `retry` was named, so the message names `herald jobs` and its commands.
            let problem = arguments.first.map { "unknown jobs command '\($0)'" } ?? "a jobs command is required"
            Console.error("herald jobs: \(problem)\n\(commandsText)\n\(usageText)\n")
            return 2
        }
        var options: [String: String] = [:]
        var index = 1
        while index < arguments.count {
            let name = arguments[index]
            guard name.hasPrefix("--"), index + 1 < arguments.count else { return usage("expected --name value pairs, got '\(name)'") }
            let key = String(name.dropFirst(2))
            guard options[key] == nil else { return usage("--\(key) is given twice") }
            options[key] = arguments[index + 1]
            index += 2
        }
        let known: Set<String> = ["app", "provider", "reason", "since", "until", "kind"]
        if let unknown = options.keys.sorted().first(where: { !known.contains($0) }) { return usage("unknown option --\(unknown)") }
        var times: [String: Int64] = [:]
        for option in ["since", "until"] {
            guard let raw = options[option] else { continue }
            guard let value = parseTime(raw) else {
                return usage("--\(option) must be an RFC 3339 time (2026-01-01T10:00:00Z) or unix milliseconds, got '\(raw)'")
            }
            times[option] = value
        }
        var app = AppID.default
        if let raw = options["app"] {
            guard let named = AppID(raw) else {
                return usage("--app must be an app id (1-\(AppID.maxLength) of a-z, 0-9 and '-', not starting with '-'), got '\(raw)'")
            }
            app = named
        }
        let filter: DeadJobFilter
        do {
            filter = try DeadJobFilter.validated(app: app, kind: options["kind"], deadSince: times["since"], deadUntil: times["until"],
                                                 provider: options["provider"], reason: options["reason"])
        } catch {
            return usage("--\(optionName(error.field)): \(error.message)")
        }
        guard let settings = Herald.loadSettings() else { return 2 }
        // A mistyped path must not quietly become a new, empty database that has no dead jobs.
        guard PostgresConfiguration.isPostgresURL(settings.databasePath) || FileManager.default.fileExists(atPath: settings.databasePath) else {
            Console.error("herald jobs retry: HERALD_DATABASE '\(settings.databasePath)' does not exist\n")
            return 2
        }
        let opened: StorageSetup.Opened
        do {
            // Never migrated here: a newer binary would change the schema under a server still
            // running on it, whose lock this command does not take.
            opened = try StorageSetup.open(settings, migrating: false)
        } catch {
            Console.error("herald jobs retry: HERALD_DATABASE '\(StorageSetup.displayName(settings.databasePath))': \(error)\n")
            if case .schemaMismatch = error { return schemaMismatchExitStatus }
            return 2
        }
        let storage = opened.storage
        defer { opened.close() }
        // A mistyped app must not quietly retry nothing, as a mistyped database path.
        if !app.isDefault {
            let named = app
            do {
                guard try storage.readSync({ tx in try tx.apps.find(named) != nil }) else {
                    return usage("--app: the database has no app '\(app)' (GET /v1/apps lists them)")
                }
            } catch {
                Console.error("herald jobs retry: the database could not be read: \(error)\n")
                return 1
            }
        }
        do {
            let now = SystemClock().unixMilliseconds
            let retried = try storage.writeSync { tx in try tx.jobs.retryDead(matching: filter, now: now) }
            guard Console.output("{\"retried\":\(retried)}\n") else {
                // Retried all the same: say so where it may still be read.
                Console.error("herald jobs retry: \(retried) dead jobs were queued again, but standard output refused the answer\n")
                return 1
            }
            return 0
        } catch {
            Console.error("herald jobs retry: the database refused the retry: \(error)\n")
            return 1
        }
    }

    /// The command-line option for a filter field (`dead_since` → `since`).
    private static func optionName(_ field: DeadJobFilter.Field) -> String {
        switch field {
        case .kind: "kind"
        case .deadSince: "since"
        case .deadUntil: "until"
        case .provider: "provider"
        case .reason: "reason"
        }
    }

    /// Unix ms from an RFC 3339 time (with or without fractional seconds) or a non-negative integer.
    static func parseTime(_ text: String) -> Int64? {
        // Digits only: `Int64` also reads `+5`, which no RFC 3339 time or unix ms is written as.
        if text.isASCIIDigits { return Int64(text) }
        // Strictly (2026-02-30 or +25:00 is refused, not rolled over into another instant).
        return RFC3339.milliseconds(text)
    }

    private static func usage(_ message: String) -> Int32 {
        Console.error("herald jobs retry: \(message)\n\(usageText)\n")
        return 2
    }
}
