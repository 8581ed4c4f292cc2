@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a time series keeps in its catalog entry (FORMAT.md §14.1): value type, options, the
/// base of its timestamps, the durable part of its head state and its author table.
package struct SeriesPayload: Sendable, Equatable {
    static let layoutVersion: UInt8 = 1
    /// Layout 2: a series that replicates (FORMAT.md §14.7): layout 1 and its replication role.
    static let replicatedLayoutVersion: UInt8 = 2

    package var typeName: String
    /// ``RetainedRange/count``.
    var retainedCount: Int?
    /// ``RetainedRange/duration`` in milliseconds.
    var retainedMilliseconds: Int64?
    var subscription: SubscriptionKind
    /// The timestamp (ms since 1970) event timestamps are stored relative to; set by the first append.
    package var baseTimestamp: Int64?
    /// The first retained sequence as of the last write of this payload. The live cutoff may be
    /// higher: it is recomputed on open from the options and the events (§14.4).
    var cutoff: UInt64
    /// The sequence of the latest edit event ever appended, if any.
    var lastEditSequence: UInt64?
    /// Authors by index; events store the index.
    package var authors: [String]
    /// The series' part in replication; nil for a series that never replicated.
    var replication: SeriesReplicationRole?

    /// The subscription range as stored: durations in milliseconds.
    enum SubscriptionKind: Sendable, Equatable {
        case latest
        case none
        case limit(Int)
        case last(Int64)
    }

    init(typeName: String, options: TimeSeriesOptions) {
        self.typeName = typeName
        self.retainedCount = nil
        self.retainedMilliseconds = nil
        self.subscription = .latest
        self.baseTimestamp = nil
        self.cutoff = 0
        self.lastEditSequence = nil
        self.authors = []
        self.replication = nil
        setOptions(options)
    }

    /// Replaces the stored options (they must be valid).
    mutating func setOptions(_ options: TimeSeriesOptions) {
        retainedCount = options.retainedRange.count
        retainedMilliseconds = options.retainedRange.duration.flatMap(SeriesTime.milliseconds)
        switch options.subscriptionRange.kind {
        case .latest: subscription = .latest
        case .none: subscription = .none
        case .limit(let n): subscription = .limit(n)
        case .last(let d): subscription = .last(SeriesTime.milliseconds(d) ?? 0)
        }
    }

    package var retainedRange: RetainedRange {
        switch (retainedCount, retainedMilliseconds) {
        case (nil, nil): return .all
        case let (n?, nil): return .limit(n)
        case let (nil, ms?): return .last(.milliseconds(ms))
        case let (n?, ms?): return .limit(n, last: .milliseconds(ms))
        }
    }

    package var subscriptionRange: SubscriptionRange {
        switch subscription {
        case .latest: return .latest
        case .none: return .none
        case .limit(let n): return .limit(n)
        case .last(let ms): return .last(.milliseconds(ms))
        }
    }

    // MARK: Encoding

    func encode() -> [UInt8] {
        var out: [UInt8] = [replication == nil ? Self.layoutVersion : Self.replicatedLayoutVersion]
        func string(_ s: String) { Varint.appendLengthPrefixed(s, to: &out) }
        string(typeName)
        var flags: UInt8 = 0
        if retainedCount != nil { flags |= 1 }
        if retainedMilliseconds != nil { flags |= 2 }
        out.append(flags)
        if let retainedCount { Varint.append(UInt64(retainedCount), to: &out) }
        if let retainedMilliseconds { Varint.append(UInt64(retainedMilliseconds), to: &out) }
        switch subscription {
        case .latest: out.append(0)
        case .none: out.append(1)
        case .limit(let n): out.append(2); Varint.append(UInt64(n), to: &out)
        case .last(let ms): out.append(3); Varint.append(UInt64(ms), to: &out)
        }
        if let baseTimestamp {
            out.append(1)
            Varint.append(UInt64(bitPattern: (baseTimestamp << 1) ^ (baseTimestamp >> 63)), to: &out)
        } else {
            out.append(0)
        }
        Varint.append(cutoff, to: &out)
        Varint.append(lastEditSequence.map { $0 + 1 } ?? 0, to: &out)
        Varint.append(UInt64(authors.count), to: &out)
        for a in authors { string(a) }
        replication?.encode(into: &out)
        return out
    }

    /// Decodes a payload; `name` is the series path, for errors.
    package static func decode(_ bytes: [UInt8], name: String) throws -> SeriesPayload {
        let file = "catalog entry time series \"\(name)\""
        guard let version = bytes.first else {
            throw StrataError.corrupted(file: file, offset: 0, reason: "empty payload")
        }
        guard version == layoutVersion || version == replicatedLayoutVersion else {
            throw StrataError.unsupportedFormatVersion(file: file, found: UInt32(version))
        }
        return try ByteReader.read(bytes, file: file, offset: 1) { r -> SeriesPayload in
            func bad(_ why: String) -> StrataError { r.corrupted(why) }
            func ms(_ what: String) throws -> Int64 {
                let v = try r.varint(what)
                guard v < UInt64(SeriesTime.limit) else { throw bad("\(what) \(v) out of range") }
                return Int64(v)
            }
            let typeName = try r.string("value type")
            let flags = try r.uint8("retained range flags")
            guard flags & ~3 == 0 else { throw bad("unknown retained range flags \(flags)") }
            var payload = SeriesPayload(typeName: typeName, options: TimeSeriesOptions())
            if flags & 1 != 0 {
                let n = try r.int("retained count")
                guard n >= 1 else { throw bad("retained count \(n) below 1") }
                payload.retainedCount = n
            }
            if flags & 2 != 0 { payload.retainedMilliseconds = try ms("retained duration") }
            switch try r.uint8("subscription range") {
            case 0: payload.subscription = .latest
            case 1: payload.subscription = .none
            case 2: payload.subscription = .limit(try r.int("subscription count"))
            case 3: payload.subscription = .last(try ms("subscription duration"))
            case let k: throw bad("unknown subscription range kind \(k)")
            }
            switch try r.uint8("base flag") {
            case 0: payload.baseTimestamp = nil
            case 1:
                let z = try r.varint("base timestamp")
                payload.baseTimestamp = Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1)
            case let k: throw bad("bad base flag \(k)")
            }
            payload.cutoff = try r.varint("cutoff")
            // A sequence (section 2, "Limit"): a larger cutoff would make the series' next
            // sequence pass 2⁶⁴ − 1 at the next append.
            guard payload.cutoff <= UInt64(Int64.max) else { throw bad("cutoff \(payload.cutoff) above 2⁶³ − 1") }
            let edit = try r.varint("last edit sequence")
            payload.lastEditSequence = edit == 0 ? nil : edit - 1
            let authors = try r.count("author count")
            for _ in 0..<authors { payload.authors.append(try r.string("author")) }
            if version == replicatedLayoutVersion { payload.replication = try SeriesReplicationRole(reading: &r) }
            try r.expectEnd("the payload")
            return payload
        }
    }
}
