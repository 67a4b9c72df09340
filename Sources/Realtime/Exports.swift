/// The model values and ports (`ChannelName`, `ChannelMessage`, `Broker`, `PresenceStore`, …)
/// live in HeraldCore; transports and routes speak them everywhere, so a module that imports
/// Realtime sees them without a second import.
@_exported import HeraldCore
