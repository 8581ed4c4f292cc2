@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Gathers the events of one flush or compaction into chunks (FORMAT.md §14.6): the
/// ``RecordRewriter`` of ``SeriesChunkTransform``.
///
/// It takes keyspace 2's records in key order — event records and chunks written before — and
/// holds one run of consecutive events of one series, emitting it as a chunk keyed by its last
/// sequence when the run ends (a gap, another series, a record it does not take) or reaches
/// ``Limits``. A full chunk met with nothing held passes through as it is. What it cannot chunk
/// passes through unchanged: events of a series of unknown type, a malformed key or record, a
/// value of the wrong size for its column, a value above the byte limit. So the rewrite never
/// loses or alters an event, whatever the input. What passes through because it is damaged (a
/// malformed key, a chunk or event record that does not decode, a chunk keyed or typed otherwise
/// than its content, a value of the wrong size, an edit of a later event) is also reported, with
/// its key, as damage (``DamageRecorder``).
final class SeriesChunkBuilder: RecordRewriter {
    /// The bounds of one chunk.
    struct Limits: Sendable {
        /// Events per chunk.
        var events: Int
        /// Bytes of values per chunk (each value's §13 bytes).
        var valueBytes: Int

        static let `default` = Limits(events: 512, valueBytes: 16 * 1024)
    }

    private let limits: Limits
    private let kinds: [UInt64: UInt8]
    private let damage: DamageReporter
    private let prefixLength = Keyspace.timeSeriesEvents.prefix.count

    // The run held: events `first ..< first + count` of series `series`.
    private var series: UInt64 = 0
    private var kind: UInt8 = 0
    private var first: UInt64 = 0
    private var timestamps: [UInt64] = []
    private var authors: [UInt64] = []
    private var originals: [SeriesChunk.Original?] = []
    private var doubles: [Double] = []
    private var integers: [Int64] = []
    private var bytes: [[UInt8]] = []
    private var valueBytes = 0
    private var keyScratch: [UInt8] = []

    init(limits: Limits, kinds: [UInt64: UInt8], damage: DamageReporter) {
        self.limits = Limits(events: min(max(limits.events, 1), ColumnHeader.maximumCount),
                             valueBytes: max(limits.valueBytes, 1))
        self.kinds = kinds
        self.damage = damage
    }

    private var count: Int { timestamps.count }

    /// One event's value on its way into the run.
    private enum Value {
        case double(Double)
        case integer(Int64)
        case bytes([UInt8])
    }

    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, emit: Emit) throws {
        var p = prefixLength
        guard let id = EventRecord.readUInt(key, at: &p), let sequence = EventRecord.readUInt(key, at: &p),
              p == key.count else {
            return try passDamaged(key, value, "malformed event key", emit)
        }
        guard let kind = kinds[id] else { return try passThrough(key, value, emit) }
        if SeriesChunk.isChunk(value) {
            let chunk: SeriesChunk
            do {
                chunk = try SeriesChunk.decode(value)
            } catch {
                return try passDamaged(key, value, error, emit)
            }
            guard chunk.lastSequence == sequence else {
                return try passDamaged(key, value, "the chunk ends at event \(chunk.lastSequence)", emit)
            }
            guard chunk.values.kind == kind else {
                return try passDamaged(key, value, "the chunk has value kind \(chunk.values.kind); the series' values are kind \(kind)", emit)
            }
            if chunk.count >= limits.events && !continuesRun(id, chunk.firstSequence) {
                return try passThrough(key, value, emit)
            }
            for i in 0..<chunk.count {
                let v: Value
                switch chunk.values {
                case .doubles(let d): v = .double(d[i])
                case .integers(let n): v = .integer(n[i])
                case .bytes(let b): v = .bytes(b[i])
                }
                try append(id: id, kind: kind, sequence: chunk.firstSequence + UInt64(i), timestamp: chunk.timestamps[i],
                           author: chunk.authors[i], original: chunk.originals[i], value: v, emit: emit)
            }
            return
        }
        guard let h = EventRecord.decode(value) else { return try passDamaged(key, value, "malformed event record", emit) }
        let raw = UnsafeRawBufferPointer(rebasing: value[h.valueOffset...])
        let v: Value
        switch kind {
        case 1:
            guard raw.count == 8 else { return try passDamaged(key, value, "a Double value of \(raw.count) bytes", emit) }
            v = .double(Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))))
        case 2:
            guard raw.count == 8 else { return try passDamaged(key, value, "an Int64 value of \(raw.count) bytes", emit) }
            v = .integer(Int64(littleEndian: raw.loadUnaligned(as: Int64.self)))
        default:
            guard raw.count <= limits.valueBytes else { return try passThrough(key, value, emit) }
            v = .bytes(Array(raw))
        }
        let original = h.original.map { SeriesChunk.Original(sequence: $0.sequence, timestamp: $0.timestampDelta, author: $0.author) }
        if let original, original.sequence >= sequence {
            return try passDamaged(key, value, "an edit of the later event \(original.sequence)", emit)
        }
        try append(id: id, kind: kind, sequence: sequence, timestamp: h.timestampDelta, author: h.author,
                   original: original, value: v, emit: emit)
    }

    func finish(emit: Emit) throws {
        try emitHeld(emit)
    }

    /// Whether event `sequence` of series `id` comes right after the run held (keys may carry
    /// any sequence up to `UInt64.max`: no addition that could overflow).
    private func continuesRun(_ id: UInt64, _ sequence: UInt64) -> Bool {
        count > 0 && series == id && sequence > first && sequence - first == UInt64(count)
    }

    /// ``passThrough(_:_:_:)`` of a damaged record, reported with its key: `reason` says what
    /// is wrong with it.
    private func passDamaged(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ reason: String,
                             _ emit: Emit) throws {
        try passDamaged(key, value, StrataError.corrupted(file: "time series events", offset: 0, reason: reason), emit)
    }

    private func passDamaged(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ error: any Error,
                             _ emit: Emit) throws {
        let e = error as? StrataError ?? .corrupted(file: "time series events", offset: 0, reason: "\(error)")
        damage(e, at: TupleKey.describe(Array(key)))
        try passThrough(key, value, emit)
    }

    /// Emits what is held, then `key`/`value` unchanged.
    private func passThrough(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ emit: Emit) throws {
        try emitHeld(emit)
        try emit(key, value)
    }

    private func append(id: UInt64, kind: UInt8, sequence: UInt64, timestamp: UInt64, author: UInt64,
                        original: SeriesChunk.Original?, value: Value, emit: Emit) throws {
        let size: Int
        if case .bytes(let b) = value { size = b.count } else { size = 8 }
        if count > 0 && (!continuesRun(id, sequence) || valueBytes + size > limits.valueBytes) {
            try emitHeld(emit)
        }
        if count == 0 {
            series = id
            self.kind = kind
            first = sequence
        }
        timestamps.append(timestamp)
        authors.append(author)
        originals.append(original)
        switch value {
        case .double(let d): doubles.append(d)
        case .integer(let n): integers.append(n)
        case .bytes(let b): bytes.append(b)
        }
        valueBytes += size
        if count >= limits.events { try emitHeld(emit) }
    }

    /// Emits the held run as one chunk keyed by its last sequence (as an event record when it
    /// holds one event), and starts over.
    private func emitHeld(_ emit: Emit) throws {
        guard count > 0 else { return }
        defer {
            timestamps.removeAll(keepingCapacity: true)
            authors.removeAll(keepingCapacity: true)
            originals.removeAll(keepingCapacity: true)
            doubles.removeAll(keepingCapacity: true)
            integers.removeAll(keepingCapacity: true)
            bytes.removeAll(keepingCapacity: true)
            valueBytes = 0
        }
        let values: SeriesChunk.Values
        switch kind {
        case 1: values = .doubles(doubles)
        case 2: values = .integers(integers)
        default: values = .bytes(bytes)
        }
        let chunk = SeriesChunk(firstSequence: first, timestamps: timestamps, authors: authors, originals: originals,
                                values: values)
        let last = chunk.lastSequence
        keyScratch = EventRecord.key(series: series, sequence: last)
        if count > 1, let record = try? chunk.encode() {
            try keyScratch.withUnsafeBytes { k in try record.withUnsafeBytes { try emit(k, $0) } }
            return
        }
        // One event, or a run the chunk layout refuses: the events as records.
        for i in 0..<count {
            let key = EventRecord.key(series: series, sequence: first + UInt64(i))
            let record = chunk.eventRecord(i)
            try key.withUnsafeBytes { k in try record.withUnsafeBytes { try emit(k, $0) } }
        }
    }
}
