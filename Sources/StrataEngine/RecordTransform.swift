@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A collection's rewriting of the live records of one keyspace, applied where the engine rewrites
/// records anyway: in every flush and compaction (FORMAT.md §10.4). Time series use it to store
/// settled events as columnar chunks (§14.6).
///
/// The engine hands a ``RecordRewriter`` the keyspace's live records in key order (after the
/// compaction filter) and writes what it emits in their place. The rewriting must keep every
/// reader's answers: a reader of the keyspace understands both what it was given and what it
/// emits.
///
/// A record the rewriter cannot read is damage (``BackgroundDamage``): it emits the record
/// unchanged, never drops it, and reports it to `damage` with its key.
package protocol RecordTransform: Sendable {
    /// A rewriter for one flush or compaction, reporting what it cannot read to `damage`.
    func makeRewriter(damage: DamageReporter) -> any RecordRewriter
}

/// Receives one keyspace's records of one flush or compaction, in key order, and emits their
/// replacements through the `emit` closure the engine passes.
///
/// Order invariant: the keys emitted over the whole job strictly increase, and every key emitted
/// is at most the largest key added so far. So a rewriter emits a buffered run no later than in
/// ``finish(emit:)``, which the engine calls before any record of the keyspace it does not hand
/// over (a tombstone), before a key of another keyspace, and at the end.
package protocol RecordRewriter: AnyObject {
    typealias Emit = (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void

    /// Takes a live record; may emit records now or hold it.
    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, emit: Emit) throws

    /// Emits everything held.
    func finish(emit: Emit) throws
}

/// Routes the records of a flush or compaction through the rewriters of their keyspaces into
/// the job's ``RunWriter``.
package struct RecordTransformer {
    private let transforms: [UInt64: any RecordTransform]
    private let writer: RunWriter
    private let emit: RecordRewriter.Emit
    private let damage: DamageRecorder
    private var rewriters: [UInt64: any RecordRewriter] = [:]
    /// The keyspace whose rewriter may hold records.
    private var open: (id: UInt64, rewriter: any RecordRewriter)?

    /// Rewriters report damage to `damage`, each as ``DamageComponent/recordTransform(keyspace:)``.
    package init(_ transforms: [UInt64: any RecordTransform], writer: RunWriter, damage: DamageRecorder) {
        self.transforms = transforms
        self.writer = writer
        self.damage = damage
        self.emit = { k, v in try writer.add(key: k, kind: .value, value: v) }
    }

    /// Writes one record of the job, through its keyspace's rewriter if it has one.
    package mutating func add(key: UnsafeRawBufferPointer, kind: RecordKind, value: UnsafeRawBufferPointer) throws {
        if transforms.isEmpty {
            try writer.add(key: key, kind: kind, value: value)
            return
        }
        let keyspace = SegmentProperties.keyspace(of: key)
        if let open, open.id != keyspace || kind != .value {
            self.open = nil
            try open.rewriter.finish(emit: emit)
        }
        guard kind == .value, let transform = transforms[keyspace] else {
            try writer.add(key: key, kind: kind, value: value)
            return
        }
        let rewriter: any RecordRewriter
        if let r = open?.rewriter {
            rewriter = r
        } else if let r = rewriters[keyspace] {
            rewriter = r
        } else {
            rewriter = transform.makeRewriter(damage: damage.reporter(for: .recordTransform(keyspace: keyspace)))
            rewriters[keyspace] = rewriter
        }
        open = (keyspace, rewriter)
        try rewriter.add(key: key, value: value, emit: emit)
    }

    /// Emits what a rewriter still holds; call before finishing the writer.
    package mutating func finish() throws {
        guard let open else { return }
        self.open = nil
        try open.rewriter.finish(emit: emit)
    }
}
