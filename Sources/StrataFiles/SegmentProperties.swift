@_spi(Layers) import StrataFormat

/// The summary a segment carries about its records (FORMAT.md, "Properties block"):
/// counts, sizes, and the key range of each keyspace.
package struct SegmentProperties: Equatable, Sendable {
    package struct KeyspaceSummary: Equatable, Sendable {
        package var id: UInt64
        package var records: UInt64 = 0
        package var tombstones: UInt64 = 0
        package var keyBytes: UInt64 = 0
        package var valueBytes: UInt64 = 0
        package var smallestKey: [UInt8] = []
        package var largestKey: [UInt8] = []

    package init(id: UInt64, records: UInt64 = 0, tombstones: UInt64 = 0, keyBytes: UInt64 = 0, valueBytes: UInt64 = 0, smallestKey: [UInt8] = [], largestKey: [UInt8] = []) {
        self.id = id
        self.records = records
        self.tombstones = tombstones
        self.keyBytes = keyBytes
        self.valueBytes = valueBytes
        self.smallestKey = smallestKey
        self.largestKey = largestKey
    }
}

    package var records: UInt64 = 0
    package var tombstones: UInt64 = 0
    package var rangeTombstones: UInt64 = 0
    package var keyBytes: UInt64 = 0
    package var valueBytes: UInt64 = 0
    package var dataBlocks: UInt64 = 0
    package var indexBlocks: UInt64 = 0
    package var storedDataBytes: UInt64 = 0
    package var uncompressedDataBytes: UInt64 = 0
    package var smallestKey: [UInt8] = []
    package var largestKey: [UInt8] = []
    package var keyspaces: [KeyspaceSummary] = []

    /// No records yet; ``add(key:kind:valueLength:)`` counts them.
    package init() {}

    /// The keyspace of a key: its leading unsigned tuple element, or `UInt64.max` ("no keyspace")
    /// when the key does not start with one.
    package static func keyspace(of key: UnsafeRawBufferPointer) -> UInt64 {
        var offset = 0
        return TupleKey.readUInt(key, at: &offset) ?? .max
    }

    /// Accounts for one record, added in key order.
    package mutating func add(key: UnsafeRawBufferPointer, kind: RecordKind, valueLength: Int) {
        if records == 0 { smallestKey = Array(key) }
        records += 1
        keyBytes += UInt64(key.count)
        valueBytes += UInt64(valueLength)
        if kind == .tombstone { tombstones += 1 }
        let ks = Self.keyspace(of: key)
        if keyspaces.last?.id != ks {
            keyspaces.append(KeyspaceSummary(id: ks, smallestKey: Array(key)))
        }
        keyspaces[keyspaces.count - 1].records += 1
        keyspaces[keyspaces.count - 1].keyBytes += UInt64(key.count)
        keyspaces[keyspaces.count - 1].valueBytes += UInt64(valueLength)
        if kind == .tombstone { keyspaces[keyspaces.count - 1].tombstones += 1 }
    }

    /// Records the last key (called once, when the segment is finished).
    package mutating func finish(lastKey: [UInt8]) {
        largestKey = lastKey
        if !keyspaces.isEmpty { keyspaces[keyspaces.count - 1].largestKey = lastKey }
    }

    /// Closes the current keyspace's range at `key` (called when the keyspace changes).
    package mutating func closeKeyspace(lastKey: [UInt8]) {
        if !keyspaces.isEmpty { keyspaces[keyspaces.count - 1].largestKey = lastKey }
    }

    package func encode() -> [UInt8] {
        var b: [UInt8] = []
        for v in [records, tombstones, rangeTombstones, keyBytes, valueBytes, dataBlocks, indexBlocks,
                  storedDataBytes, uncompressedDataBytes] {
            Varint.append(v, to: &b)
        }
        Self.appendBytes(smallestKey, to: &b)
        Self.appendBytes(largestKey, to: &b)
        Varint.append(UInt64(keyspaces.count), to: &b)
        for k in keyspaces {
            for v in [k.id, k.records, k.tombstones, k.keyBytes, k.valueBytes] { Varint.append(v, to: &b) }
            Self.appendBytes(k.smallestKey, to: &b)
            Self.appendBytes(k.largestKey, to: &b)
        }
        return b
    }

    package static func decode(_ b: UnsafeRawBufferPointer) -> SegmentProperties? {
        var p = 0
        var r = SegmentProperties()
        func u() -> UInt64? { Varint.read(b, at: &p) }
        func bytes() -> [UInt8]? {
            guard let n = Varint.readLength(b, at: &p, limit: b.count - p) else { return nil }
            defer { p += n }
            return Array(b[p..<(p + n)])
        }
        guard let a = u(), let t = u(), let rt = u(), let kb = u(), let vb = u(), let db = u(), let ib = u(),
              let sd = u(), let ud = u(), let sk = bytes(), let lk = bytes(),
              let n = Varint.readLength(b, at: &p, limit: b.count)
        else { return nil }
        r.records = a; r.tombstones = t; r.rangeTombstones = rt; r.keyBytes = kb; r.valueBytes = vb
        r.dataBlocks = db; r.indexBlocks = ib; r.storedDataBytes = sd; r.uncompressedDataBytes = ud
        r.smallestKey = sk; r.largestKey = lk
        for _ in 0..<n {
            guard let id = u(), let rc = u(), let tc = u(), let kbs = u(), let vbs = u(),
                  let s = bytes(), let l = bytes() else { return nil }
            r.keyspaces.append(KeyspaceSummary(id: id, records: rc, tombstones: tc, keyBytes: kbs,
                                               valueBytes: vbs, smallestKey: s, largestKey: l))
        }
        return p == b.count ? r : nil
    }

    private static func appendBytes(_ v: [UInt8], to b: inout [UInt8]) {
        Varint.append(UInt64(v.count), to: &b)
        b.append(contentsOf: v)
    }
}
