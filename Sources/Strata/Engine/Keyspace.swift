/// The keyspaces of a store: the first element of every key (DESIGN.md, "Keys").
///
/// Ids are written into every key on disk: never change or reuse one.
package struct Keyspace: Hashable, Sendable {
    package let id: UInt64
    /// The encoded first tuple element shared by every key of the keyspace.
    package let prefix: [UInt8]

    init(id: UInt64) {
        self.id = id
        var p: [UInt8] = []
        let n = (64 - id.leadingZeroBitCount + 7) / 8
        p.append(0x10 + UInt8(n))
        for i in stride(from: n - 1, through: 0, by: -1) { p.append(UInt8(truncatingIfNeeded: id >> (8 * UInt64(i)))) }
        self.prefix = p
    }

    /// Collection catalog: names to ids, options, head state.
    static let catalog = Keyspace(id: 0)
    /// The raw key-value API of ``Store`` (``Store/put(_:_:)`` and friends).
    package static let keyValue = Keyspace(id: 1)
    /// Time-series events: `(2, seriesId, sequence)`.
    static let timeSeriesEvents = Keyspace(id: 2)
    /// History messages: `(3, channelId, timetoken)`.
    static let channelMessages = Keyspace(id: 3)
    /// Documents: `(4, databaseId, documentId)`.
    static let documents = Keyspace(id: 4)
    /// Index rows: `(5, indexId, collated key, documentId)`.
    package static let indexRows = Keyspace(id: 5)
    /// The persistent change feed of document databases: `(6, databaseId, changeSequence)`.
    static let documentChanges = Keyspace(id: 6)
    /// Attachments, apart from their documents so that queries never read them:
    /// `(7, databaseId, documentId, name)`.
    static let attachments = Keyspace(id: 7)
    // Id 8 is the time-series edit index (TimeSeries/EventRecord.swift), 10 the channel heads
    // (History/ChannelHead.swift); 9, 11 and 12…15 stay reserved for the collections.

    /// Names for tools.
    package static func name(of id: UInt64) -> String {
        switch id {
        case 0: return "catalog"
        case 1: return "key-value"
        case 2: return "time-series events"
        case 3: return "history messages"
        case 4: return "documents"
        case 5: return "index rows"
        case 6: return "document changes"
        case 7: return "attachments"
        case 8: return "time-series edit index"
        case 10: return "channel heads"
        case .max: return "(no keyspace)"
        default: return "keyspace \(id)"
        }
    }

    func key(_ suffix: [UInt8]) -> [UInt8] { prefix + suffix }

    /// The first key after every key of the keyspace.
    var end: [UInt8] { Keyspace(id: id + 1).prefix }
}
