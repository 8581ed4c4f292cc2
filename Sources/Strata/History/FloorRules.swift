import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What the compaction filter of keyspace 3 knows of each channel: below which timetoken its
/// records are gone (FORMAT.md §15.4). Shared by every channel of a store; channels it has no rule
/// for keep everything.
final class FloorRules: Sendable {
    struct Rule: Sendable, Equatable {
        /// The persisted floor (the channel head's).
        var floor: UInt64
        /// Retention in 100-ns units.
        var retention: UInt64?
        /// Whether the channel has a limit. Then only `floor` applies physically: the messages
        /// between it and the retention floor (at most `limit` of them) stay on disk, so that the
        /// channel's count of messages above its floor stays exact.
        var limited: Bool
    }

    private let rules = Mutex<[UInt64: Rule]>([:])

    func set(_ channelId: UInt64, _ rule: Rule) {
        rules.withLock { $0[channelId] = rule }
    }

    /// The compaction filter's answer for one record of keyspace 3.
    func keep(key: UnsafeRawBufferPointer, now: () -> UInt64) -> Bool {
        guard let (id, tt) = MessageRecord.parse(key: key) else { return true }
        guard let rule = rules.withLock({ $0[id] }) else { return true }
        if tt < rule.floor { return false }
        if let retention = rule.retention, !rule.limited {
            let n = now()
            return n < retention || tt >= n - retention
        }
        return true
    }
}
