import HeraldCore
import PushHTTP

/// Both APNs gateways as configured: `HERALD_APNS_URL` and `HERALD_APNS_SANDBOX_URL`,
/// defaulting to Apple's hosts (SPEC settings table).
public struct APNsGateways: Hashable, Sendable {
    public var production: APNsGateway
    public var sandbox: APNsGateway

    public init(production: APNsGateway = .production, sandbox: APNsGateway = .sandbox) {
        self.production = production
        self.sandbox = sandbox
    }

    /// Reads `HERALD_APNS_URL` and `HERALD_APNS_SANDBOX_URL`; unset or blank → Apple's hosts.
    public init(settings environment: [String: String]) {
        production = EnvironmentReading.value("HERALD_APNS_URL", in: environment)
            .map { APNsGateway(isSandbox: false, baseURL: $0) } ?? .production
        sandbox = EnvironmentReading.value("HERALD_APNS_SANDBOX_URL", in: environment)
            .map { APNsGateway(isSandbox: true, baseURL: $0) } ?? .sandbox
    }

    /// The gateway for a device's stored `environment` (`sandbox`, anything else → production,
    /// which is the registration default in seed 000).
    public func gateway(forDeviceEnvironment environment: String?) -> APNsGateway {
        environment?.lowercased() == "sandbox" ? sandbox : production
    }
}
