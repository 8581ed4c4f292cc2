import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One channel of a store, as `strata-dump channels` lists it.
public struct ChannelSummary: Codable, Sendable, Equatable {
    /// The channel's name.
    public var name: String
    /// Its catalog id (the second element of its message keys).
    public var id: UInt64
    /// The stored message type name (`JSON`, `String`, `Codable:…`).
    public var messageType: String
    /// The messages a reader sees now (retention and limit applied).
    public var messages: Int
    /// The oldest of those messages' timetoken; nil when there are none.
    public var firstTimetoken: Timetoken?
    /// The newest of those messages' timetoken; nil when there are none.
    public var lastTimetoken: Timetoken?
    /// Key and value bytes of those messages, before block compression.
    public var bytes: Int
    /// The largest timetoken the channel ever assigned (0 if none).
    public var headTimetoken: Timetoken
    /// The retention in seconds, if any.
    public var retentionSeconds: Double?
    /// The limit, if any.
    public var limit: Int?
}

/// One message, decoded for people and scripts.
public struct InspectedMessage: Codable, Sendable, Equatable {
    /// The message's timetoken: its place in the channel.
    public var timetoken: Timetoken
    /// The timetoken's time, ISO 8601.
    public var time: String
    /// The author the store recorded for the message (its `StoreOptions.principal`), if any.
    public var publisher: String?
    /// The metadata as JSON text.
    public var meta: String?
    /// The message as JSON text; nil if it did not decode (see `error`).
    public var message: String?
    /// Why the record did not decode.
    public var error: String?
    /// True for a provisional message (a replicating channel's, not yet ordered by the gateway);
    /// nil for a final one.
    public var isProvisional: Bool?
}

/// A channel's summary and its messages (oldest first).
public struct ChannelDump: Codable, Sendable, Equatable {
    /// The channel, as ``ChannelInspector/channels(ofStoreAt:now:key:)`` lists it.
    public var channel: ChannelSummary
    /// The messages asked for, oldest first.
    public var messages: [InspectedMessage]
    /// Whether messages were left out by the limit asked for (the newest are shown).
    public var truncated: Bool
}

/// The channels of a store and their messages, read from its files without opening it (no lock,
/// no writes), with the same queries the store runs: retention is measured against `now` (or the
/// largest timetoken the store assigned, if later).
///
/// ```swift
/// for c in try ChannelInspector.channels(ofStoreAt: "/var/lib/app/data.strata") {
///     print(c.name, c.messages, c.firstTimetoken ?? .zero, c.bytes)
/// }
/// ```
public enum ChannelInspector {
    /// Every channel of the store, in name order.
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func channels(ofStoreAt directory: String, now: Date = Date(), key: EncryptionKey? = nil) throws -> [ChannelSummary] {
        let image = try Image(directory: directory, now: now, key: key)
        return try image.entries.map { try image.summary(of: $0.name, entry: $0.entry) }
    }

    /// Channel `name` and its newest `limit` messages (all of them when nil), oldest first.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if the store has no such channel.
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func dump(channel name: String, ofStoreAt directory: String, limit: Int? = nil,
                            now: Date = Date(), key: EncryptionKey? = nil) throws -> ChannelDump {
        let image = try Image(directory: directory, now: now, key: key)
        guard let entry = image.entries.first(where: { $0.name == name })?.entry else {
            throw StrataError.notFound(kind: .channel, name: name, reason: "channel \"\(name)\" in \(directory)")
        }
        let summary = try image.summary(of: name, entry: entry)
        let descriptor = try ChannelDescriptor(decoding: entry.payload, channel: name)
        let keys = ChannelKeys(name: name, id: entry.id)
        let floor = try image.floor(keys.id, descriptor)
        let cursor = image.snapshot.cursor(lower: keys.key(floor), upper: keys.end, reverse: true)
        var messages: [InspectedMessage] = []
        var truncated = false
        while try cursor.next() {
            if let limit, messages.count >= limit {
                truncated = true
                break
            }
            let tt = cursor.withKey { MessageRecord.timetoken(ofKey: $0, prefixLength: keys.prefix.count) } ?? 0
            var m = InspectedMessage(timetoken: Timetoken(tt), time: JSON.iso8601String(Timetoken(tt).date))
            do {
                let decoded = try HistoryQuery.json(tt, cursor.value, keys: keys, typeName: descriptor.typeName)
                m.publisher = decoded.publisher
                m.isProvisional = decoded.isProvisional ? true : nil
                m.meta = decoded.meta.map { String(decoding: $0.jsonData(sortedKeys: true), as: UTF8.self) }
                m.message = String(decoding: decoded.message.jsonData(sortedKeys: true), as: UTF8.self)
            } catch {
                m.error = "\(error)"
            }
            messages.append(m)
        }
        return ChannelDump(channel: summary, messages: messages.reversed(), truncated: truncated)
    }

    /// A store's files, read once.
    private struct Image {
        let snapshot: Snapshot
        let entries: [(name: String, entry: CatalogEntry)]
        let heads: [UInt64: ChannelHead]
        let now: UInt64

        init(directory: String, now: Date, key: EncryptionKey?) throws {
            let dir = PathStatus.normalizedDirectory(directory)
            try PathStatus.requireDirectory(dir)
            snapshot = try StoreImage.snapshot(directory: dir, key: key ?? InspectionKey.current)
            entries = try Catalog.entries(kind: .channel, in: snapshot)
            heads = try ChannelHead.all(in: snapshot)
            self.now = max(Timetoken(date: now).rawValue, heads.values.map(\.last).max() ?? 0)
        }

        func floor(_ id: UInt64, _ descriptor: ChannelDescriptor) throws -> UInt64 {
            HistoryQuery.floor(head: heads[id] ?? ChannelHead(), retention: descriptor.retention, now: now)
        }

        func summary(of name: String, entry: CatalogEntry) throws -> ChannelSummary {
            let descriptor = try ChannelDescriptor(decoding: entry.payload, channel: name)
            let keys = ChannelKeys(name: name, id: entry.id)
            let cursor = snapshot.cursor(lower: keys.key(try floor(entry.id, descriptor)), upper: keys.end)
            var count = 0
            var bytes = 0
            var first: UInt64?
            var last: UInt64?
            while try cursor.next() {
                let tt = cursor.withKey { k -> UInt64? in
                    bytes += k.count
                    return MessageRecord.timetoken(ofKey: k, prefixLength: keys.prefix.count)
                }
                bytes += cursor.value.count
                count += 1
                if first == nil { first = tt }
                last = tt
            }
            let options = descriptor.options
            return ChannelSummary(
                name: name, id: entry.id, messageType: descriptor.typeName, messages: count,
                firstTimetoken: first.map { Timetoken($0) }, lastTimetoken: last.map { Timetoken($0) }, bytes: bytes,
                headTimetoken: Timetoken(heads[entry.id]?.last ?? 0),
                retentionSeconds: descriptor.retention.map { Double($0) / Timetoken.unitsPerSecond },
                limit: options.limit)
        }
    }
}
