import Foundation
import Synchronization
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Power loss at the collection level: the workloads of the collections' crash helpers
// (Sources/strata-crash-helper/SeriesMode.swift, HistoryMode.swift, DocumentsMode.swift) run
// in-process through the Store API, with `.synchronous` durability and small memtables and
// segments (so flushes, compactions and log rotations happen), under `PowerLossSimulator`, which
// takes crash clones at random system calls: what a power cut at that instant would leave. Cuts
// also fall right after each collection is created (a deterministic cut at the moment creation
// returns), during index builds, and during the recovery of each clone. Each clone must open,
// verify clean (`StoreVerifier`, the library side of `strata-dump verify`), hold every
// acknowledged operation (the one in flight whole or not at all), keep each collection's rules,
// and go on correctly: a series continues at the right next sequence, a new timetoken is above
// every acknowledged one, a new save gets the next revision, and index queries equal a
// brute-force map over the documents. Trials chain: each continues from the last clone checked,
// so that recovery meets the leftovers of a power cut. `STRATA_POWERLOSS_TRIALS` (trials per
// workload) raises the default.

/// One workload under power cuts. Its journal holds the operations since the trusted state it
/// began from (a cleanly closed store, or a clone already checked); the simulator's progress
/// counts journal entries begun and acknowledged (all synchronous: acknowledged is durable).
private protocol PowerLossWorkload: AnyObject {
    var name: String { get }
    /// Reads the store's state as the baseline, opens the collections it has, empties the journal.
    func begin(_ store: Store) throws
    /// One operation: appended to the journal, reported to the simulator before and after.
    func step(_ store: Store, _ simulator: PowerLossSimulator) throws
    /// Checks a store opened from a clone taken when `durable` journal entries were acknowledged
    /// and `begun` begun; then writes once more and checks the collections go on by their rules.
    /// Returns the problems found. Calls `beforeWriting` before its own writes.
    func check(_ store: Store, durable: Int, begun: Int, beforeWriting: () -> Void) throws -> [String]
}

/// Names of the collections of `kind` in the store's catalog.
private func catalogNames(_ store: Store, _ kind: CollectionKind) throws -> Set<String> {
    Set(try Catalog.entries(kind: kind, in: try store.engine.snapshot()).map(\.name))
}

/// Records journal entry `index` (0-based) as begun, runs `body`, records it acknowledged.
private func perform<T>(_ simulator: PowerLossSimulator, index: Int, _ body: () throws -> T) rethrows -> T {
    simulator.update { $0.begun[0] = index + 1 }
    let result = try body()
    simulator.update {
        $0.acknowledged[0] = index + 1
        $0.durable[0] = index + 1
    }
    return result
}

private let fixedDate = Date(timeIntervalSince1970: 1_700_000_000)

// MARK: - Time series

/// The `series` crash mode: `crash/all` (retains everything) and `crash/limit` (the last 40
/// events) from the start, up to three more series created along the way; batches of 1…20
/// originals (original s has the value s + 0.25) or an edit of a retained original o
/// (value −(o + 0.5)).
private final class SeriesWorkload: PowerLossWorkload {
    enum Op {
        case create(Int)
        case append(Int, first: UInt64, count: Int)
        case edit(Int, sequence: UInt64, original: UInt64)
    }

    static let paths = ["crash/all", "crash/limit", "crash/new0", "crash/new1", "crash/new2"]
    static func options(_ i: Int) -> TimeSeriesOptions {
        TimeSeriesOptions(retainedRange: i == 1 ? .limit(40) : .all)
    }

    let name = "time series"
    var rng: SplitMix64
    var baseNext: [Int: UInt64] = [:]
    var journal: [Op] = []
    var open: [Int: TimeSeries<Double>] = [:]
    var originals: [Int: [UInt64]] = [:]
    var creationsChecked = 0
    var cutsDuringCreation = 0

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    func begin(_ store: Store) throws {
        journal = []
        open = [:]
        baseNext = [:]
        originals = [:]
        let names = try catalogNames(store, .timeSeries)
        for (i, path) in Self.paths.enumerated() where names.contains(path) {
            let s = try store.timeSeries(path, of: Double.self, options: Self.options(i))
            open[i] = s
            baseNext[i] = try s.bounds().next
            originals[i] = try s.query(.edits(.all)).events.filter { !$0.isEditEvent }.suffix(50).map(\.sequence)
        }
    }

    func step(_ store: Store, _ simulator: PowerLossSimulator) throws {
        let missing = [0, 1].first { open[$0] == nil } ?? (rng.chance(25) ? (2..<5).first { open[$0] == nil } : nil)
        if let i = missing {
            journal.append(.create(i))
            if rng.chance(500) { simulator.cut(afterEvents: 1 + rng.below(3)) }
            open[i] = try perform(simulator, index: journal.count - 1) {
                try store.timeSeries(Self.paths[i], of: Double.self, options: Self.options(i))
            }
            simulator.cutNow(label: "right after creating time series \(Self.paths[i])")
            return
        }
        let i = open.keys.sorted()[rng.below(open.count)]
        let s = open[i]!
        let bounds = try s.bounds()
        let next = bounds.next
        if rng.below(6) == 0, let o = originals[i, default: []].last(where: { $0 >= bounds.firstRetained }) {
            journal.append(.edit(i, sequence: next, original: o))
            let m = try perform(simulator, index: journal.count - 1) { try s.edit(originalSequence: o, value: -(Double(o) + 0.5)) }
            guard m.sequence == next else { throw StrataError.invalidArgument(argument: "test", reason: "edit got \(m.sequence), expected \(next)") }
        } else {
            let n = 1 + rng.below(20)
            journal.append(.append(i, first: next, count: n))
            let ms = try perform(simulator, index: journal.count - 1) {
                try s.append(contentsOf: (0..<n).map { Double(next + UInt64($0)) + 0.25 })
            }
            guard ms.first?.sequence == next, ms.count == n else {
                throw StrataError.invalidArgument(argument: "test", reason: "append got \(ms.map(\.sequence)), expected \(n) from \(next)")
            }
            originals[i, default: []] += ms.map(\.sequence)
            if originals[i]!.count > 100 { originals[i]!.removeFirst(50) }
        }
    }

    /// Series i's next sequence after the first `k` journal entries; nil if it does not exist then.
    func expectedNext(_ i: Int, after k: Int) -> UInt64? {
        var next = baseNext[i]
        for op in journal.prefix(k) {
            switch op {
            case .create(let j) where j == i: next = next ?? 0
            case .append(let j, let first, let count) where j == i: next = first + UInt64(count)
            case .edit(let j, let sequence, _) where j == i: next = sequence + 1
            default: break
            }
        }
        return next
    }

    func check(_ store: Store, durable: Int, begun: Int, beforeWriting: () -> Void) throws -> [String] {
        var problems: [String] = []
        let names = try catalogNames(store, .timeSeries)
        var series: [(String, TimeSeries<Double>)] = []
        for (i, path) in Self.paths.enumerated() {
            let low = expectedNext(i, after: durable), high = expectedNext(i, after: begun)
            guard names.contains(path) else {
                if low != nil { problems.append("\(path): its acknowledged creation is lost (no catalog entry)") }
                continue
            }
            if high == nil { problems.append("\(path): in the catalog, never created") }
            if case .create(let j)? = journal.prefix(durable).last, j == i { creationsChecked += 1 }
            if begun > durable, case .create(let j) = journal[durable], j == i { cutsDuringCreation += 1 }
            let s = try store.timeSeries(path, of: Double.self, options: Self.options(i))
            let bounds = try s.bounds()
            let events = try s.query(.edits(.all)).events
            if events.map(\.sequence) != Array(bounds.firstRetained..<bounds.next) {
                problems.append("\(path): sequences \(events.first?.sequence ?? 0)…\(events.last?.sequence ?? 0) (\(events.count)) not contiguous in \(bounds.firstRetained)..<\(bounds.next)")
            }
            if i == 1 {
                if bounds.count != min(40, bounds.next) { problems.append("\(path): \(bounds.count) retained of \(bounds.next)") }
            } else if bounds.firstRetained != 0 {
                problems.append("\(path): retains from \(bounds.firstRetained), not 0")
            }
            for e in events {
                if let o = e.originalEvent {
                    if !(o.sequence < e.sequence && e.value == -(Double(o.sequence) + 0.5)) {
                        problems.append("\(path): edit \(e.sequence) of \(o.sequence) has \(e.value)")
                    }
                } else if e.value != Double(e.sequence) + 0.25 {
                    problems.append("\(path): event \(e.sequence) has \(e.value)")
                }
            }
            let want = low ?? 0
            if bounds.next != want && bounds.next != (high ?? 0) {
                problems.append("\(path): next sequence \(bounds.next), expected \(want)\(high != low ? " (or \(high ?? 0) with the write in flight)" : "")")
            }
            series.append((path, s))
        }
        // Each series goes on at its next sequence.
        beforeWriting()
        for (path, s) in series {
            let next = try s.bounds().next
            let m = try s.append(Double(next) + 0.25)
            if m.sequence != next { problems.append("\(path): the append after reopen got \(m.sequence), expected \(next)") }
        }
        return problems
    }
}

// MARK: - Message history

/// The `history` crash mode: channels c0…c3 from the start, c4…c6 created along the way; single
/// publishes (some with meta and publisher) and batches of up to 20 messages. The clock stands
/// still, so every timetoken comes from the persisted channel heads, not from time passing.
private final class HistoryWorkload: PowerLossWorkload {
    enum Op {
        case create(Int)
        /// `records`: the messages as `read` shows them (with their meta and publisher).
        case publish(Int, records: [String], first: UInt64?)
    }

    static let channels = 7
    let name = "message history"
    var rng: SplitMix64
    var baseline: [Int: [UInt64: String]] = [:]
    var journal: [Op] = []
    var open: [Int: Channel<String>] = [:]
    var batchNumber = 0
    var trial = 0
    var cutsDuringCreation = 0

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    /// Message j of batch i (unique, with a filler whose length varies).
    static func message(trial: Int, batch i: Int, index j: Int) -> String {
        let filler = String("abcdefghij".dropFirst((i + j) % 10))
        let repeats = 1 + (i * 7 + j) % 9
        return "\(trial)/\(i)/\(j) " + String(repeating: filler, count: repeats)
    }

    /// A message with its meta and publisher, as one string to compare.
    static func record(_ text: String, meta: JSON?, publisher: String?) -> String {
        text + (meta.map { " meta \($0)" } ?? "") + (publisher.map { " by \($0)" } ?? "")
    }

    static func read(_ channel: Channel<String>) throws -> [UInt64: String] {
        var stored: [UInt64: String] = [:]
        var page = try channel.history(limit: 100)
        while true {
            for m in page.messages { stored[m.timetoken.rawValue] = record(m.message, meta: m.meta, publisher: m.publisher) }
            guard page.hasMore, let s = page.start else { break }
            page = try channel.history(start: s, limit: 100)
        }
        return stored
    }

    func begin(_ store: Store) throws {
        journal = []
        open = [:]
        baseline = [:]
        trial += 1
        let names = try catalogNames(store, .channel)
        for c in 0..<Self.channels where names.contains("c\(c)") {
            open[c] = try store.channel("c\(c)", of: String.self)
            baseline[c] = try Self.read(open[c]!)
        }
    }

    func step(_ store: Store, _ simulator: PowerLossSimulator) throws {
        let missing = (0..<4).first { open[$0] == nil } ?? (rng.chance(25) ? (4..<Self.channels).first { open[$0] == nil } : nil)
        if let c = missing {
            journal.append(.create(c))
            if rng.chance(500) { simulator.cut(afterEvents: 1 + rng.below(3)) }
            open[c] = try perform(simulator, index: journal.count - 1) { try store.channel("c\(c)", of: String.self) }
            simulator.cutNow(label: "right after creating channel c\(c)")
            return
        }
        let c = open.keys.sorted()[rng.below(open.count)]
        let channel = open[c]!
        let i = batchNumber
        batchNumber += 1
        let n = rng.below(3) == 0 ? 1 + rng.below(20) : 1
        let texts = (0..<n).map { j in Self.message(trial: trial, batch: i, index: j) }
        let meta: JSON? = n == 1 && i % 3 == 0 ? ["i": .int(Int64(i))] : nil
        let records = texts.map { Self.record($0, meta: meta, publisher: meta == nil ? nil : "p") }
        journal.append(.publish(c, records: records, first: nil))
        let first = try perform(simulator, index: journal.count - 1) { () throws -> Timetoken in
            if n > 1 { return try channel.publish(contentsOf: texts)[0] }
            return meta == nil ? try channel.publish(texts[0]) : try channel.publish(texts[0], meta: meta, publisher: "p")
        }
        journal[journal.count - 1] = .publish(c, records: records, first: first.rawValue)
    }

    func check(_ store: Store, durable: Int, begun: Int, beforeWriting: () -> Void) throws -> [String] {
        var problems: [String] = []
        let names = try catalogNames(store, .channel)
        var newest: UInt64 = 0
        var channels: [Int: Channel<String>] = [:]
        for c in 0..<Self.channels {
            var want = baseline[c]
            for op in journal.prefix(durable) {
                switch op {
                case .create(let d) where d == c:
                    want = want ?? [:]
                case .publish(let d, let records, let first?) where d == c:
                    for (j, r) in records.enumerated() { want?[first + UInt64(j)] = r }
                default: break
                }
            }
            var inFlight: Op?
            if begun > durable { inFlight = journal[durable] }
            newest = max(newest, want?.keys.max() ?? 0)
            guard names.contains("c\(c)") else {
                if want != nil { problems.append("c\(c): its acknowledged creation is lost (no catalog entry)") }
                continue
            }
            if want == nil, case .create(let d)? = inFlight, d == c {
                want = [:]
                cutsDuringCreation += 1
            }
            guard var expected = want else {
                problems.append("c\(c): in the catalog, never created")
                continue
            }
            let channel = try store.channel("c\(c)", of: String.self)
            channels[c] = channel
            let stored = try Self.read(channel)
            newest = max(newest, stored.keys.max() ?? 0)
            let extra = stored.filter { expected[$0.key] == nil }
            if !extra.isEmpty {
                // The batch in flight may be there, whole, or not at all.
                if case .publish(let d, let records, _)? = inFlight, d == c, extra.count == records.count,
                   Set(extra.values) == Set(records), extra.keys.min()! > (expected.keys.max() ?? 0) {
                    for (tt, t) in extra { expected[tt] = t }
                } else {
                    problems.append("c\(c): messages nothing acknowledged or in flight wrote: \(extra.sorted { $0.key < $1.key }.prefix(3))")
                }
            }
            let missing = expected.filter { stored[$0.key] != $0.value }
            if !missing.isEmpty {
                problems.append("c\(c): \(missing.count) acknowledged messages missing or changed, e.g. \(missing.sorted { $0.key < $1.key }.prefix(3))")
            }
        }
        // A publish after the reopen gets a timetoken above every acknowledged and stored one.
        beforeWriting()
        for (c, channel) in channels.sorted(by: { $0.key < $1.key }) {
            let tt = try channel.publish("after reopen").rawValue
            if tt <= newest { problems.append("c\(c): the publish after reopen got timetoken \(tt), not above \(newest)") }
            newest = tt
        }
        return problems
    }
}

// MARK: - Documents

/// The map of index `byV` of the `documents` crash mode: two rows per document with a `v`.
private let byVMap: DocumentIndex.Map = { doc, emit in
    if let v = doc["v"] {
        emit(v, doc["b"])
        emit([doc["g"] ?? nil, v], nil)
    }
}

/// A second index, created along the way (an index build under power cuts).
private let byGMap: DocumentIndex.Map = { doc, emit in
    if let g = doc["g"] { emit(g, doc["v"]) }
}

/// Cuts the power while index byG builds: its map takes a cut at the n-th document it maps.
private final class BuildCutter: Sendable {
    private let countdown = Atomic<Int>(-1)
    private let simulator = Mutex<PowerLossSimulator?>(nil)

    /// Cuts at the `n`-th document mapped from now (never when n ≤ 0).
    func arm(_ n: Int, _ simulator: PowerLossSimulator?) {
        self.simulator.withLock { $0 = simulator }
        countdown.store(n, ordering: .sequentiallyConsistent)
    }

    var map: DocumentIndex.Map {
        { [self] doc, emit in
            if countdown.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue == 0 {
                simulator.withLock { $0 }?.cutNow(label: "while index byG builds")
            }
            try byGMap(doc, emit)
        }
    }
}

/// The `documents` crash mode: database `crash` with index `byV`; batches of 1…30 documents
/// `d<0…299>` plus `last` (b = the batch number) in one `save(contentsOf:)`, some followed by a
/// deletion; the index `byG` is added along the way, and rebuilt under new versions (each a
/// build over every document, cut at a random document by `BuildCutter`).
private final class DocumentWorkload: PowerLossWorkload {
    enum Op {
        case open
        case addIndex(version: Int)
        case save(b: Int64, documents: [Document], saved: [Document]?)
        case delete(String)
    }

    static let ids = (0..<300).map { "d\($0)" } + ["last"]
    let name = "documents"
    var rng: SplitMix64
    var baseline: [String: Document]?
    var baseByG = 0
    var journal: [Op] = []
    var db: DocumentDatabase?
    /// The version of index byG the workload names (0: none).
    var byG = 0
    let cutter = BuildCutter()
    var b: Int64 = 0
    var indexBuildsChecked = 0
    var cutsDuringBuilds = 0

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    static func indexes(byG: Int, map: @escaping DocumentIndex.Map = byGMap) -> [DocumentIndex] {
        [DocumentIndex(name: "byV", version: "1", map: byVMap)]
            + (byG > 0 ? [DocumentIndex(name: "byG", version: String(byG), map: map)] : [])
    }

    func begin(_ store: Store) throws {
        journal = []
        db = nil
        baseline = nil
        guard try catalogNames(store, .documentDatabase).contains("crash") else { return }
        baseByG = byG
        let opened = try store.documents("crash", indexes: Self.indexes(byG: byG, map: cutter.map))
        db = opened
        baseline = try opened.documents(ids: Self.ids)
        if let last = baseline?["last"]?["b"]?.int64Value { b = last + 1 }
    }

    func step(_ store: Store, _ simulator: PowerLossSimulator) throws {
        guard let db else {
            journal.append(.open)
            if rng.chance(500) { simulator.cut(afterEvents: 1 + rng.below(4)) }
            db = try perform(simulator, index: journal.count - 1) { try store.documents("crash", indexes: Self.indexes(byG: byG, map: cutter.map)) }
            simulator.cutNow(label: "right after creating document database crash")
            return
        }
        if journal.count > 10 && rng.chance(byG == 0 ? 30 : 10) {
            byG += 1
            journal.append(.addIndex(version: byG))
            // Half the builds are cut at a random document they map.
            let documents = try db.documents(ids: Self.ids).count
            cutter.arm(rng.chance(500) ? 1 + rng.below(max(documents, 1)) : -1, simulator)
            defer { cutter.arm(-1, nil) }
            _ = try perform(simulator, index: journal.count - 1) {
                try store.documents("crash", indexes: Self.indexes(byG: byG, map: cutter.map))
            }
            simulator.cutNow(label: "right after building index byG version \(byG)")
            return
        }
        var docs: [Document] = []
        for _ in 0..<(1 + rng.below(30)) {
            var d = Document(id: "d\(rng.below(300))")
            d["v"] = .int(Int64(rng.below(50)))
            d["g"] = .string(["x", "y", "z"][rng.below(3)])
            d["b"] = .int(b)
            d["filler"] = .string(String(repeating: "f", count: rng.below(200)))
            docs.append(d)
        }
        var last = Document(id: "last")
        last["b"] = .int(b)
        docs.append(last)
        journal.append(.save(b: b, documents: docs, saved: nil))
        let saved = try perform(simulator, index: journal.count - 1) { try db.save(contentsOf: docs) }
        journal[journal.count - 1] = .save(b: b, documents: docs, saved: saved)
        b += 1
        if rng.below(4) == 0 {
            let id = "d\(rng.below(300))"
            journal.append(.delete(id))
            do {
                try perform(simulator, index: journal.count - 1) { try db.delete(id: id) }
            } catch StrataError.notFound {
                simulator.update { $0.acknowledged[0] = self.journal.count; $0.durable[0] = self.journal.count }
            }
        }
    }

    func check(_ store: Store, durable: Int, begun: Int, beforeWriting: () -> Void) throws -> [String] {
        var problems: [String] = []
        var want = baseline
        var byG = baseByG
        for op in journal.prefix(durable) {
            switch op {
            case .open: want = want ?? [:]
            case .addIndex(let version): byG = version
            case .save(_, _, let saved?): for d in saved { want?[d.metadata.id] = d }
            case .save: break
            case .delete(let id): want?[id] = nil
            }
        }
        let inFlight = begun > durable ? journal[durable] : nil
        if case .addIndex(let version)? = inFlight {
            byG = version
            cutsDuringBuilds += 1
        }
        guard try catalogNames(store, .documentDatabase).contains("crash") else {
            if want != nil { problems.append("database crash: its acknowledged creation is lost (no catalog entry)") }
            return problems
        }
        if case .addIndex? = journal.prefix(durable).last { indexBuildsChecked += 1 }
        let db = try store.documents("crash", indexes: Self.indexes(byG: byG))
        let live = try db.documents(ids: Self.ids)
        var expected = want ?? [:]
        // The operation in flight is there whole or not at all.
        switch inFlight {
        case .save(let batch, let docs, _)?:
            if live["last"]?["b"]?.int64Value == batch {
                for d in docs {
                    if expected[d.metadata.id]?.fields != d.fields { expected[d.metadata.id] = live[d.metadata.id] ?? d }
                }
            }
        case .delete(let id)?:
            if live[id] == nil { expected[id] = nil }
        default: break
        }
        for id in Self.ids where live[id]?.fields != expected[id]?.fields || live[id]?.metadata.revision != expected[id]?.metadata.revision {
            let describe = { (d: Document?) in d.map { "b \($0["b"]?.int64Value ?? -1) revision \($0.metadata.revision)" } ?? "absent" }
            problems.append("document \(id): \(describe(live[id])), expected \(describe(expected[id]))")
            if problems.count > 5 { break }
        }
        // Index rows equal a brute-force map over the documents.
        for (index, map) in [("byV", byVMap)] + (byG > 0 ? [("byG", byGMap)] : []) {
            let rows = try db.query(index, .all).rows
            if rows != (try ReferenceIndex(documents: live, map: map).run(.all, reduction: nil)) {
                problems.append("index \(index): \(rows.count) rows differ from the map over \(live.count) documents")
            }
        }
        // The change feed has one entry per id, at its current revision.
        let feed = try db.changes(since: 0).changes
        if Set(feed.map(\.id)).count != feed.count { problems.append("the change feed repeats ids") }
        for change in feed where live[change.id].map({ change.isDeletion || change.revision != $0.metadata.revision }) ?? !change.isDeletion {
            problems.append("change feed: \(change) disagrees with the document")
        }
        // A save after the reopen gets the next revision.
        beforeWriting()
        var probe = Document(id: "d0")
        probe["v"] = .int(7)
        let saved = try db.save(probe)
        // (A deleted document's revisions go on from its deletion's, which the change feed shows.)
        let before = feed.first { $0.id == "d0" }?.revision ?? 0
        if saved.metadata.revision != before + 1 {
            problems.append("the save after reopen got revision \(saved.metadata.revision), d0 had \(before)")
        }
        return problems
    }
}

// MARK: - The model workload

/// The reference's state after each write of a `ModelRun` (a digest and key count), and for each
/// cut the states it may hold: after any write from those promised durable to those begun.
private final class ModelJournal {
    struct State { var digest: UInt64, count: Int }
    let simulator: PowerLossSimulator
    /// State after write w at `states[w - first]`; older ones are dropped once no cut can need them.
    var states: [State] = [State(digest: ModelRun.digest([]), count: 0)]
    var first = 0
    var writes = 0
    var candidates: [Int: [State]] = [:]
    var cutsSeen = 0

    init(_ simulator: PowerLossSimulator) { self.simulator = simulator }

    func note(_ event: ModelWriteEvent, _ run: ModelRun) {
        // Cuts taken since the last event: their range of writes is still journaled.
        let cuts = simulator.allCuts
        for cut in cuts[cutsSeen...] {
            let low = cut.progress.durable[0], high = cut.progress.begun[0]
            candidates[cut.number] = Array(states[(low - first)...(high - first)])
        }
        cutsSeen = cuts.count
        switch event {
        case .writing(let synchronous):
            writes += 1
            states.append(State(digest: run.referenceDigest, count: run.referenceCount))
            let n = writes
            simulator.update { $0.begun[0] = n }
            if synchronous { pendingSynchronous = true }
        case .wrote:
            let n = writes, durable = pendingSynchronous
            simulator.update {
                $0.acknowledged[0] = n
                if durable { $0.durable[0] = n }
            }
            if durable { forget(below: n) }
            pendingSynchronous = false
        case .closed:
            let n = writes
            simulator.update { $0.acknowledged[0] = n; $0.durable[0] = n }
            forget(below: n)
        }
    }

    private var pendingSynchronous = false

    private func forget(below n: Int) {
        states.removeFirst(n - first)
        first = n
    }
}

// MARK: - The driver

@Suite("Power loss in the collections") struct PowerLossCollectionTests {
    /// 3 trials per workload by default; `STRATA_POWERLOSS_TRIALS` sets the number.
    static var trials: Int {
        max(1, ProcessInfo.processInfo.environment["STRATA_POWERLOSS_TRIALS"].flatMap { Int($0) } ?? 3)
    }

    static func options() -> StoreOptions {
        var o = StoreOptions(durability: .synchronous)
        o.memtableSize = 64 << 10
        o.segmentSize = 64 << 10
        o.blockSize = 1 << 10
        o.cacheSize = 256 << 10
        o.clock = { fixedDate }
        o.fileSystem = PowerLoss.fileSystem
        return o
    }

    struct Figures {
        var cuts = 0, recoveryCuts = 0, promised = 0, atManifests = 0, inSegments = 0
    }

    @Test("time series under power cuts: contiguous sequences, acknowledged events, the right next sequence")
    func timeSeries() throws {
        let workload = SeriesWorkload(seed: 0x5E41_0001)
        let figures = try run(workload, seed: 0x5E41_0001, steps: 600)
        #expect(workload.creationsChecked > 0, "no cut checked a series right after its creation")
        #expect(workload.cutsDuringCreation > 0, "no cut fell while a series was created")
        #expect(figures.cuts > Self.trials && figures.promised > 0)
    }

    @Test("message history under power cuts: acknowledged timetokens present, new ones above them")
    func history() throws {
        let workload = HistoryWorkload(seed: 0x4B11_0001)
        let figures = try run(workload, seed: 0x4B11_0001, steps: 600)
        #expect(workload.cutsDuringCreation > 0, "no cut fell while a channel was created")
        #expect(figures.cuts > Self.trials && figures.promised > 0)
    }

    @Test("documents under power cuts: acknowledged saves at their revisions, index rows equal the map")
    func documents() throws {
        let workload = DocumentWorkload(seed: 0xD0C5_0001)
        let figures = try run(workload, seed: 0xD0C5_0001, steps: 150)
        #expect(workload.indexBuildsChecked > 0, "no cut checked an index right after its build")
        #expect(workload.cutsDuringBuilds > 0, "no cut fell during an index build")
        #expect(figures.cuts > Self.trials && figures.promised > 0)
    }

    /// The Store-level model workload of `EngineModelTests` (random batches, puts, deletes and
    /// range deletions, mostly `.buffered` with a few synchronous batches, compactions, snapshots,
    /// close and reopen) under power cuts. A buffered write may be lost, so each clone must hold
    /// the reference's state after some number of writes between those promised durable (by a
    /// synchronous write or a close) and those begun: a prefix of the writes, never a torn one.
    @Test("the Store-level model workload under power cuts: each clone holds a prefix of the writes")
    func modelWorkload() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let base = temporary.path
        var checked = 0, promised = 0
        for trial in 0..<Self.trials {
            let seed = 0x5EED_9A3E_0000 &+ UInt64(trial)
            let directory = base + "/store\(trial)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let simulator = try PowerLossSimulator(directory: directory, cloneRoot: base + "/trial\(trial)-cut", seed: seed,
                                                   cutChance: 1.0 / 800, maxCuts: 8, progress: .init(start: [0]))
            let journal = ModelJournal(simulator)
            let options: StoreOptions
            do {
                PowerLoss.attach(simulator)
                defer { PowerLoss.detach(simulator) }
                let run = try ModelRun(seed: seed, directory: URL(fileURLWithPath: directory, isDirectory: true))
                options = run.options
                run.observer = { journal.note($0, run) }
                do {
                    try run.run(operations: 4_000)
                } catch {
                    Issue.record("model trial \(trial), seed \(seed): \(error)")
                }
                try run.store.close()
                journal.note(.closed, run)
            }
            if ProcessInfo.processInfo.environment["STRATA_POWERLOSS_DEBUG"] != nil {
                print("DEBUG model trial \(trial): \(simulator.events) events, \(journal.writes) writes, cuts: \(simulator.allCuts.map { "\($0.progress.durable[0])…\($0.progress.begun[0]) after \($0.after)" })")
            }
            for cut in simulator.allCuts {
                let label = "model trial \(trial), seed \(seed), cut \(cut.number) at system call \(cut.event) (after \(cut.after))"
                defer { try? FileManager.default.removeItem(atPath: cut.directory) }
                guard let candidates = journal.candidates[cut.number] else {
                    Issue.record("\(label): no journal for the cut")
                    continue
                }
                _ = PowerLossSimulator.verifyClone(cut.directory, label: label)
                do {
                    let store = try Store.open(at: URL(fileURLWithPath: cut.directory, isDirectory: true), options: options)
                    defer { try? store.close() }
                    let pairs = try store.scan()
                    let digest = ModelRun.digest(pairs)
                    if !candidates.contains(where: { $0.digest == digest && $0.count == pairs.count }) {
                        let first = cut.progress.durable[0]
                        Issue.record("\(label): the store (\(pairs.count) keys) is the reference after none of writes \(first)…\(first + candidates.count - 1) (key counts \(candidates.map(\.count).prefix(8)))")
                    }
                    try store.close()
                } catch {
                    Issue.record("\(label): the clone does not open or read: \(error)")
                }
                checked += 1
                promised += cut.progress.durable[0]
            }
        }
        #expect(checked >= Self.trials && promised > 0, "cuts checked: \(checked), writes promised durable at them: \(promised)")
    }

    /// Runs `trials` trials of `steps` operations, each from the last clone checked; checks every cut.
    private func run(_ workload: PowerLossWorkload, seed: UInt64, steps: Int) throws -> Figures {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let base = temporary.path
        var directory = base + "/store"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var random = SplitMix64(seed: seed)
        var figures = Figures()
        for trial in 0..<Self.trials {
            let trialSeed = random.next()
            let label = "\(workload.name), trial \(trial), seed \(trialSeed)"
            let simulator = try PowerLossSimulator(directory: directory, cloneRoot: base + "/trial\(trial)-cut", seed: trialSeed,
                                                   cutChance: 1.0 / 1200, maxCuts: 14, progress: .init(start: [0]))
            do {
                PowerLoss.attach(simulator)
                defer { PowerLoss.detach(simulator) }
                let store = try Store.open(at: URL(fileURLWithPath: directory, isDirectory: true), options: Self.options())
                do {
                    try workload.begin(store)
                    for _ in 0..<steps { try workload.step(store, simulator) }
                } catch {
                    Issue.record("\(label): the workload failed: \(error)")
                }
                try store.close()
            }
            var next: String?
            if ProcessInfo.processInfo.environment["STRATA_POWERLOSS_DEBUG"] != nil {
                print("DEBUG \(label): \(simulator.events) events, cuts: \(simulator.allCuts.map(\.after))")
            }
            for cut in simulator.allCuts {
                let cutLabel = "\(label), cut \(cut.number) at system call \(cut.event) (after \(cut.after))"
                if check(cut, workload, seed: trialSeed &+ UInt64(cut.number), label: cutLabel, figures: &figures) {
                    next = cut.directory
                }
            }
            // Continue from the last clone checked (recovered, written to and closed once).
            if let next { directory = next }
            for cut in simulator.allCuts where cut.directory != directory {
                try? FileManager.default.removeItem(atPath: cut.directory)
            }
        }
        if ProcessInfo.processInfo.environment["STRATA_POWERLOSS_DEBUG"] != nil { print("DEBUG \(workload.name): \(figures)") }
        return figures
    }

    /// Verifies the clone a cut left, opens it (under a simulator of its own, cutting recovery
    /// too) and checks it with the workload; then checks each recovery cut the same way.
    private func check(_ cut: PowerLossSimulator.Cut, _ workload: PowerLossWorkload, seed: UInt64, label: String,
                       figures: inout Figures) -> Bool {
        let durable = cut.progress.durable[0], begun = cut.progress.begun[0]
        func open(_ directory: String, _ label: String, beforeWriting: () -> Void = {}) -> Bool {
            do {
                let store = try Store.open(at: URL(fileURLWithPath: directory, isDirectory: true), options: Self.options())
                defer { try? store.close() }
                let problems = try workload.check(store, durable: durable, begun: begun, beforeWriting: beforeWriting)
                for p in problems { Issue.record("\(label): \(p)") }
                try store.close()
                return problems.isEmpty
            } catch {
                Issue.record("\(label): the clone does not open or read: \(error)")
                return false
            }
        }
        var ok = PowerLossSimulator.verifyClone(cut.directory, label: label)
        let simulator: PowerLossSimulator
        do {
            simulator = try PowerLossSimulator(directory: cut.directory, cloneRoot: cut.directory + "-recovery", seed: seed,
                                               cutChance: 1.0 / 30, maxCuts: 1, progress: cut.progress)
        } catch {
            Issue.record("\(label): \(error)")
            return false
        }
        PowerLoss.attach(simulator)
        ok = open(cut.directory, label, beforeWriting: { simulator.freeze() }) && ok
        PowerLoss.detach(simulator)
        for r in simulator.allCuts {
            defer { try? FileManager.default.removeItem(atPath: r.directory) }
            let rLabel = "\(label); then recovery cut \(r.number) at system call \(r.event) (after \(r.after))"
            ok = PowerLossSimulator.verifyClone(r.directory, label: rLabel) && open(r.directory, rLabel) && ok
            figures.recoveryCuts += 1
        }
        figures.cuts += 1
        figures.promised += durable
        if cut.after.contains("MANIFEST") { figures.atManifests += 1 }
        if cut.after.contains(".seg") { figures.inSegments += 1 }
        return ok
    }
}
