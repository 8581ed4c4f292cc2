@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a replicating series does (FORMAT.md §14.7, Gateway/PROTOCOL.md "Time series"): one
/// writer numbers the events and uploads them; the gateway keeps them; every other store applies
/// them at the same sequences.
extension SeriesState {
    /// An event of the gateway's series, as the change feed gives it, with its value in this
    /// series' stored form.
    struct PulledEvent: Sendable, Equatable {
        let sequence: UInt64
        let timestamp: Int64
        let author: String
        let value: [UInt8]
        let original: UInt64?
    }

    /// Throws unless this store may append to or edit the series: a series that never replicated,
    /// or one whose writer this store is.
    func checkLocalWrite(_ w: Writer) throws {
        switch w.payload.replication {
        case nil, .writer: return
        case .claiming:
            throw StrataError.conflict("time series \"\(path)\" replicates, and the gateway has not granted this store the right to write it yet: a replicated series has one writer, named by the gateway when the store first reaches it")
        case .reader:
            throw StrataError.conflict("time series \"\(path)\" is written by another store: a replicated series has one writer, and this store reads it")
        }
    }

    /// The series' part in replication now.
    var replicationRole: SeriesReplicationRole? { status.payload.replication }

    /// Marks the series as replicating. With `pushes`, a series that never replicated starts
    /// claiming (local writes wait for the gateway's answer) and the writer id to claim with is
    /// returned; a writer or claimer returns its id. Without, it becomes a reader, which a series
    /// with events of its own cannot (they would fork it): a ``StrataError/conflict(_:)``.
    func beginReplication(pushes: Bool) throws -> [UInt8]? {
        try write { w, batch in
            switch w.payload.replication {
            case .writer(let id)?, .claiming(let id)?:
                return id
            case .reader?:
                return nil
            case nil:
                guard pushes else {
                    guard w.head.next == 0 else {
                        throw StrataError.conflict("time series \"\(path)\" has events of its own and cannot replicate as a reader: replicate it with a configuration that pushes (its store claims it as the writer), or use a new series")
                    }
                    stageRole(.reader, &w, into: &batch)
                    return nil
                }
                var generator = SystemRandomNumberGenerator()
                let writerID = RandomID.bytes(SeriesReplicationRole.writerIDLength, using: &generator)
                stageRole(.claiming(writerID: writerID), &w, into: &batch)
                return writerID
            }
        }
    }

    /// The gateway's answer to a claim: granted (the store writes the series from now on), or
    /// refused (another store writes it). Refused, a series without events becomes a reader and
    /// the call returns true; one with events of its own stays claiming and the call returns false.
    func claimAnswered(granted: Bool) throws -> Bool {
        try write { w, batch in
            guard case .claiming(let writerID)? = w.payload.replication else { return true }
            if granted {
                stageRole(.writer(writerID: writerID), &w, into: &batch)
            } else {
                guard w.head.next == 0 else { return false }
                stageRole(.reader, &w, into: &batch)
            }
            return true
        }
    }

    /// Sets the series' role in `w` and adds its catalog payload (layout 2) to `batch`.
    private func stageRole(_ role: SeriesReplicationRole, _ w: inout Writer, into batch: inout CommitBatch) {
        w.payload.replication = role
        Catalog.put(CatalogEntry(id: id, payload: w.payload.encode()), kind: .timeSeries, name: path, into: &batch.records)
    }

    var replica: SeriesReplicaKeys { SeriesReplicaKeys(seriesID: id) }

    /// A varint kept in keyspace 9 (0 when absent).
    func replicaCounter(_ key: [UInt8], what: String) throws -> UInt64 {
        guard let bytes = try engine.snapshot().get(key) else { return 0 }
        return try ReplicaCounter.decode(bytes, what: "time series \"\(path)\" \(what)")
    }

    /// Records that the events below `next` are on the gateway at `url`.
    func setUploaded(_ next: UInt64, url: String) throws {
        var batch = CommitBatch()
        batch.records.putRaw(replica.uploaded(url), ReplicaCounter.encoded(next))
        try engine.commit(batch)
    }

    /// An event to upload: its metadata and its value as JSON.
    struct UploadEvent: Sendable {
        let sequence: UInt64
        let timestamp: Int64
        let author: String
        let value: JSON
        let original: UInt64?
    }

    /// The retained events from `from` on (at most `limit`), oldest first, and the series' next
    /// sequence.
    func events(from: UInt64, limit: Int) throws -> (events: [UploadEvent], next: UInt64) {
        let (reader, decoding, _) = try reader()
        let head = reader.head
        let first = max(from, head.cutoff)
        guard first < head.next else { return ([], head.next) }
        let last = min(head.next - 1, first + UInt64(limit) - 1)
        var cursor = try reader.events(from: Int64(first), through: Int64(last))
        var out: [UploadEvent] = []
        while try cursor.next() {
            let sequence = UInt64(cursor.sequence)
            let event = try cursor.withRecord { bytes -> UploadEvent in
                guard let h = EventRecord.decode(bytes), h.author < decoding.authors.count else {
                    throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0, reason: "event \(sequence): malformed record")
                }
                let value = try ValueCodec<JSON>.json(typeName: typeName, bytes: UnsafeRawBufferPointer(rebasing: bytes[h.valueOffset...]))
                return UploadEvent(sequence: sequence, timestamp: decoding.base &+ Int64(truncatingIfNeeded: h.timestampDelta),
                                   author: decoding.authors[Int(h.author)], value: value, original: h.original?.sequence)
            }
            out.append(event)
        }
        return (out, head.next)
    }

    /// Applies events pulled from the gateway, in sequence order, and saves the pull checkpoint
    /// `since` for `url`, in one commit. Events below the series' next sequence are already here
    /// (the writer's own, or a page pulled again) and are skipped; a series without events starts
    /// at the first sequence it pulls; any other gap is the gateway's fault, refused.
    func applyPulled(_ events: [PulledEvent], checkpoint url: String, since: UInt64) throws {
        try write { w, batch in
            var i = 0
            while i < events.count {
                let e = events[i]
                if e.sequence < w.head.next { i += 1; continue }
                if e.sequence > w.head.next {
                    guard w.head.next == 0 else {
                        throw StrataError.network("time series \"\(path)\": the gateway sent event \(e.sequence) after \(w.head.next - 1)")
                    }
                    w.head.next = e.sequence
                    w.head.cutoff = e.sequence
                    w.payload.cutoff = e.sequence
                }
                if let original = e.original {
                    _ = try stageEdit(&w, original: original, author: e.author, encode: { $0 += e.value },
                                      into: &batch, pulledTimestamp: e.timestamp)
                    i += 1
                    continue
                }
                // A run of plain events by one author, in one staging call.
                var j = i + 1
                while j < events.count, events[j].original == nil, events[j].author == e.author,
                      events[j].sequence == e.sequence + UInt64(j - i) { j += 1 }
                let run = events[i..<j]
                _ = try stageAppend(&w, count: run.count, timestamps: run.map(\.timestamp), author: e.author,
                                    encode: { k, out in out += run[run.startIndex + k].value }, into: &batch, pulled: true)
                i = j
            }
            batch.records.putRaw(replica.checkpoint(url), ReplicaCounter.encoded(since))
        }
    }
}
