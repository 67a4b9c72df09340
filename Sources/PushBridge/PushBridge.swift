// Empty on purpose. The delivery worker moved to HeraldCore (Sources/HeraldCore/Delivery); this
// target stays only so the `import PushBridge` lines of Sources/API/Notifications compile while
// the Notifier moves to HeraldCore. Delete the target, its line in Package.swift and those imports
// together once that move lands.
