/// The keyspaces of a store: the first element of every key (DESIGN.md, "Keys").
///
/// Ids are written into every key on disk: never change or reuse one.
struct Keyspace: Hashable, Sendable {
    let id: UInt64
    /// The encoded first tuple element shared by every key of the keyspace.
    let prefix: [UInt8]

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
    static let keyValue = Keyspace(id: 1)

    /// Names for tools.
    static func name(of id: UInt64) -> String {
        switch id {
        case 0: return "catalog"
        case 1: return "key-value"
        case .max: return "(no keyspace)"
        default: return "keyspace \(id)"
        }
    }

    func key(_ suffix: [UInt8]) -> [UInt8] { prefix + suffix }

    /// The first key after every key of the keyspace.
    var end: [UInt8] { Keyspace(id: id + 1).prefix }
}
