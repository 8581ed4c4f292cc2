import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The engine's record transforms (FORMAT.md §10.4), with a transform of the tests' own: flushes
/// and compactions write what it emits, in order, and it never sees tombstones.
@Suite("Record transforms")
struct RecordTransformTests {
    /// Marks each value it is given with "T:" (once), holding up to three records before it
    /// emits them, and counts what it was shown.
    final class Marking: RecordTransform {
        let seen = Mutex<(records: Int, tombstones: Int, finishes: Int)>((0, 0, 0))

        func makeRewriter(damage: DamageReporter) -> any RecordRewriter { Rewriter(self) }

        final class Rewriter: RecordRewriter {
            let owner: Marking
            var held: [([UInt8], [UInt8])] = []
            init(_ owner: Marking) { self.owner = owner }

            func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, emit: Emit) throws {
                owner.seen.withLock { $0.records += 1 }
                let v = Array(value)
                held.append((Array(key), v.starts(with: Array("T:".utf8)) ? v : Array("T:".utf8) + v))
                if held.count == 3 { try finish(emit: emit) }
            }

            func finish(emit: Emit) throws {
                owner.seen.withLock { $0.finishes += 1 }
                for (k, v) in held { try k.withUnsafeBytes { k in try v.withUnsafeBytes { try emit(k, $0) } } }
                held = []
            }
        }
    }

    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test("flushes and compactions write the transform's records; tombstones and other keyspaces go around it in order")
    func transformsRecords() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let marking = Marking()
        store.engine.setRecordTransform(keyspace: Keyspace.keyValue.id, marking)
        for i in 0..<20 { try store.put(Self.b("k\(i / 10)\(i % 10)"), Self.b("v\(i)")) }
        try store.compact()
        #expect(try store.get(Self.b("k07")) == Self.b("T:v7"))
        // A newer run with tombstones between values: the held records are emitted before each.
        try store.delete(Self.b("k03"))
        try store.put(Self.b("k04"), Self.b("new"))
        try store.delete(Self.b("k05"))
        try store.put(Self.b("k06"), Self.b("newer"))
        try store.compact()
        #expect(try store.get(Self.b("k03")) == nil)
        #expect(try store.get(Self.b("k05")) == nil)
        #expect(try store.get(Self.b("k04")) == Self.b("T:new"))
        #expect(try store.get(Self.b("k06")) == Self.b("T:newer"))
        var all: [[UInt8]] = []
        let c = try store.engine.snapshot().cursor(lower: Keyspace.keyValue.prefix, upper: Keyspace.keyValue.end)
        while try c.next() {
            #expect(Array(c.value).starts(with: Self.b("T:")))
            all.append(c.key)
        }
        #expect(all.count == 18 && all == all.sorted { $0.lexicographicallyPrecedes($1) })
        let seen = marking.seen.withLock { $0 }
        #expect(seen.records >= 20 + 18 && seen.finishes > 0)
        // Without the transform, what was written stays as it is.
        store.engine.setRecordTransform(keyspace: Keyspace.keyValue.id, nil)
        try store.put(Self.b("k99"), Self.b("plain"))
        try store.compact()
        #expect(try store.get(Self.b("k99")) == Self.b("plain"))
        #expect(try store.get(Self.b("k07")) == Self.b("T:v7"))
    }
}
