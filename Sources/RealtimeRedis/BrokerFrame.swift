import HeraldCore

/// A message as the broker's scripts store and publish it: eight fields separated by LF,
/// `epoch, sequence, offset, previous sequence on the channel, retain (1/0), event, channel,
/// data`. Data is last and may hold anything but a raw LF is impossible anyway (compact JSON on one
/// line, `PublishRequest.data`).
///
/// `previous` chains a channel's messages: a node that saw sequence P on a channel expects the
/// next message there to name P, and anything else (but 0, a channel started again after its
/// history expired) means it missed one.
struct BrokerFrame: Equatable {
    let epoch: UInt32
    let sequence: UInt64
    let offset: UInt64
    let previous: UInt64
    let retain: Bool
    let event: EventName
    let channel: ChannelName
    let data: String

    /// - Returns: nil for bytes that are not a frame (a foreign publisher on our channel).
    init?(_ bytes: [UInt8]) {
        var fields: [ArraySlice<UInt8>] = []
        var start = 0
        for index in bytes.indices where bytes[index] == 10 && fields.count < 7 {
            fields.append(bytes[start..<index])
            start = index + 1
        }
        guard fields.count == 7 else { return nil }
        func text(_ slice: ArraySlice<UInt8>) -> String { String(decoding: slice, as: UTF8.self) }
        guard fields[0].count == 8, let epoch = UInt32(text(fields[0]), radix: 16),
              let sequence = UInt64(text(fields[1])), let offset = UInt64(text(fields[2])),
              let previous = UInt64(text(fields[3])),
              let event = EventName(text(fields[5])), let channel = ChannelName(storedRawValue: text(fields[6])) else { return nil }
        self.epoch = epoch
        self.sequence = sequence
        self.offset = offset
        self.previous = previous
        self.retain = fields[4].elementsEqual("1".utf8)
        self.event = event
        self.channel = channel
        self.data = text(bytes[start...])
    }

    func message(publishedAt: UInt64) -> ChannelMessage {
        ChannelMessage(channel: channel, event: event, offset: offset, cursor: StreamCursor(epoch: epoch, sequence: sequence),
                       data: data, publishedAt: publishedAt, retain: retain)
    }

    /// The 8-hex-digit text of an epoch, as cursors and the meta hash spell it.
    static func epochText(_ epoch: UInt32) -> String {
        let hex = String(epoch, radix: 16)
        return String(repeating: "0", count: 8 - hex.utf8.count) + hex
    }
}
