import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A brute-force model of a time series and of RangeQuery, written from API.md and the
/// RangeQuery documentation (positions as doubled indexes into the view), independently of
/// SeriesReader.
struct SeriesModel {
    struct E {
        var sequence: Int
        var time: Int64
        var original: Int?   // for edits
        var value: Int64
    }

    var events: [E] = []
    var cutoff = 0
    var count: Int?
    var duration: Int64?

    var latestTime: Int64? { events.last?.time }

    mutating func applyRetention() {
        guard let last = events.last else { return }
        if let count { cutoff = max(cutoff, events.count - count) }
        if let duration {
            while cutoff < events.count - 1 && events[cutoff].time < last.time - duration { cutoff += 1 }
        }
    }

    var retained: ArraySlice<E> { events[cutoff...] }

    /// The view: (position sequence, time for positions, event shown).
    func view(_ v: RangeQuery.View) -> [(seq: Int, time: Int64, shown: E)] {
        let r = retained
        var latestEdit: [Int: Int] = [:]
        for e in events where e.original != nil { latestEdit[e.original!] = e.sequence }
        switch v {
        case .allEdits:
            return r.map { ($0.sequence, $0.time, $0) }
        case .latestEdits:
            return r.filter { $0.original == nil || latestEdit[$0.original!] == $0.sequence }.map { ($0.sequence, $0.time, $0) }
        case .values:
            return r.filter { $0.original == nil }.map { o in
                let shown = latestEdit[o.sequence].map { events[$0] } ?? o
                return (o.sequence, o.time, shown)
            }
        }
    }

    /// Returns (shown sequences, selected count).
    func run(_ q: RangeQuery) -> ([Int], Int) {
        let v = view(q.view)
        let n = v.count
        guard n > 0, let L = latestTime else { return ([], 0) }
        func seqPoint(_ s: UInt64) -> (Int, Int) {
            if let i = v.firstIndex(where: { UInt64($0.seq) == s }) { return (2 * i, 2 * i) }
            let i = v.firstIndex(where: { UInt64($0.seq) > s }) ?? n
            return (2 * i - 1, 2 * i - 1)
        }
        // A count beyond the view's size reaches past its ends just as n + 1 does (and keeps the
        // position arithmetic below from overflowing on Int.max).
        func clamp(_ k: Int) -> Int { min(k, n + 1) }
        func datePoint(_ d: Int64) -> (Int, Int) {
            let same = v.indices.filter { v[$0].time == d }
            if let a = same.first, let b = same.last { return (2 * a, 2 * b) }
            let i = v.firstIndex(where: { $0.time > d }) ?? n
            return (2 * i - 1, 2 * i - 1)
        }
        // Durations and dates beyond ±2^53 ms (the range of stored timestamps) reach past every
        // event: 2^60 stands for them.
        func ms(_ d: Duration) -> Int64 { SeriesTime.milliseconds(d) ?? (1 << 60) }
        func ms(_ d: Date) -> Int64 {
            SeriesTime.milliseconds(d) ?? (d.timeIntervalSince1970 < 0 ? -(1 << 60) : 1 << 60)
        }
        var anchorTime: Int64?
        let anchor: (lo: Int, hi: Int)
        switch q.anchor {
        case .start: anchor = (-1, -1)
        case .sequence(let s): anchor = seqPoint(s)
        case .date(let d): anchorTime = ms(d); anchor = datePoint(anchorTime!)
        case .last(let k0):
            let k = clamp(k0)
            anchor = k == 0 ? (2 * n - 1, 2 * n - 1) : k > n ? (-1, -1) : (2 * (n - k), 2 * (n - k))
        case .lastDuration(let d): anchorTime = L - ms(d); anchor = datePoint(anchorTime!)
        }
        let time: Int64 = {
            if let anchorTime { return anchorTime }
            if anchor.lo % 2 == 0 { return v[anchor.lo / 2].time }
            let i = (anchor.lo + 1) / 2
            return i < n ? v[i].time : L
        }()
        var chosen: [Int] = []   // view indexes
        // Forward when the end reaches the anchor's start: an end on a date's run of events that
        // also holds the anchor's first event runs forward (API.md: `untilLast(.zero)` ends at the
        // latest event, so `fromLast(2).untilLast(.zero)` is `fromLast(2)`).
        func to(_ e: (Int, Int)) {
            if e.1 >= anchor.lo {
                chosen = v.indices.filter { anchor.lo <= 2 * $0 && 2 * $0 <= e.1 }
            } else {
                chosen = v.indices.filter { e.0 <= 2 * $0 && 2 * $0 <= anchor.hi }
            }
        }
        func floorDiv2(_ x: Int) -> Int { x >= 0 ? x / 2 : -((-x + 1) / 2) }
        switch q.span {
        case .untilLast(let k0):
            let k = clamp(k0)
            to(k == 0 ? (2 * n - 1, 2 * n - 1) : k >= n ? (-1, -1) : (2 * (n - 1 - k), 2 * (n - 1 - k)))
        case .untilLastDuration(let d): to(datePoint(L - ms(d)))
        case .toSequence(let s): to(seqPoint(s))
        case .toDate(let d): to(datePoint(ms(d)))
        case .toStart: to((-1, -1))
        case .next(let k0):
            let k = clamp(k0)
            let j0 = floorDiv2(anchor.hi) + 1
            let end = 2 * (j0 + k - 1)
            chosen = v.indices.filter { anchor.lo <= 2 * $0 && 2 * $0 <= end }
        case .previous(let k0):
            let k = clamp(k0)
            let j0 = -floorDiv2(-anchor.lo) - 1   // ceil(lo / 2) - 1
            let start = 2 * (j0 - k + 1)
            chosen = v.indices.filter { start <= 2 * $0 && 2 * $0 <= anchor.hi }
        case .nextDuration(let d):
            chosen = v.indices.filter { 2 * $0 >= anchor.lo && v[$0].time <= time + ms(d) }
        case .previousDuration(let d):
            chosen = v.indices.filter { 2 * $0 <= anchor.hi && v[$0].time >= time - ms(d) }
        }
        let selected = chosen.count
        if let limit = q.limitCount, chosen.count > limit { chosen = Array(chosen.suffix(limit)) }
        return (chosen.map { v[$0].shown.sequence }, selected)
    }
}

@Suite("TimeSeries range queries against a model")
struct RangeQueryModelTests {
    static let base: Int64 = 1_600_000_000_000

    func randomQuery(_ r: inout SplitMix64, _ model: SeriesModel) -> RangeQuery {
        let n = model.events.count
        let t0 = model.events.first?.time ?? Self.base
        let span = (model.latestTime ?? Self.base) - t0
        // Half the dates are an event's own timestamp, so that spans and anchors often fall on a
        // run of events sharing it.
        func date() -> Date {
            if n > 0, r.chance(500) { return SeriesTime.date(model.events[r.below(n)].time) }
            return SeriesTime.date(t0 - 3 + Int64(r.below(Int(span) + 7)))
        }
        func count() -> Int { r.below(n + 4) }
        func duration() -> Duration {
            // Often the distance back from the latest event to an event's timestamp.
            if n > 0, r.chance(500), let latest = model.latestTime {
                return .milliseconds(latest - model.events[r.below(n)].time)
            }
            return .milliseconds(r.below(Int(span) + 5))
        }
        func seq() -> UInt64 { UInt64(r.below(n + 4)) }
        var q: RangeQuery
        switch r.below(3) {
        case 0: q = .values
        case 1: q = .edits(.all)
        default: q = .edits(.latest)
        }
        switch r.below(5) {
        case 0: q = r.chance(500) ? q : q.fromStart()
        case 1: q = q.from(sequence: seq())
        case 2: q = q.from(date())
        case 3: q = q.fromLast(count())
        default: q = q.fromLast(duration())
        }
        switch r.below(10) {
        case 0: q = q.untilLast(r.chance(300) ? 0 : count())
        case 1: q = q.untilLast(duration())
        case 2: q = q.to(sequence: seq())
        case 3: q = q.to(date())
        case 4: q = q.toStart()
        case 5: q = q.next(count())
        case 6: q = q.next(duration())
        case 7: q = q.previous(count())
        case 8: q = q.previous(duration())
        default: break
        }
        if r.chance(300) { q = q.limit(r.below(n + 2)) }
        return q
    }

    @Test("every anchor × span × view against the model, random series with edits and retention",
          arguments: 0..<16)
    func randomized(seed: Int) throws {
        // Seeds 12 and up: timestamps move rarely, so long runs of events share one.
        let duplicates = seed >= 12
        var r = SplitMix64(seed: 0x5EED_0000 + UInt64(seed))
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        let store = try openStore(dir, clock: clock, small: seed % 3 == 0)
        defer { try? store.close() }
        var model = SeriesModel()
        var retained = RetainedRange.all
        switch seed % 4 {
        case 1: model.count = 20 + r.below(60); retained = .limit(model.count!)
        case 2: model.duration = Int64(30 + r.below(100)); retained = .last(.milliseconds(model.duration!))
        case 3:
            model.count = 30 + r.below(50); model.duration = Int64(50 + r.below(100))
            retained = .limit(model.count!, last: .milliseconds(model.duration!))
        default: break
        }
        let s = try store.timeSeries("q", of: Int64.self, options: TimeSeriesOptions(retainedRange: retained))
        var t = Self.base
        let total = seed == 0 ? 0 : 40 + r.below(200)
        var checked = 0
        for step in 0..<total {
            if r.chance(250), model.events.count > model.cutoff {
                // An edit of a random retained original (if any).
                let originals = model.retained.filter { $0.original == nil }.map(\.sequence)
                if let o = originals.randomElement(using: &r) {
                    t += Int64(r.below(3))
                    clock.set(t)
                    let seq = model.events.count
                    let m = try s.edit(originalSequence: UInt64(o), value: Int64(seq))
                    #expect(m.sequence == UInt64(seq))
                    model.events.append(.init(sequence: seq, time: t, original: o, value: Int64(seq)))
                    model.applyRetention()
                    continue
                }
            }
            let k = 1 + r.below(4)
            var batch: [(value: Int64, timestamp: Date)] = []
            for _ in 0..<k {
                t += Int64(duplicates ? (r.below(6) == 0 ? 1 + r.below(2) : 0) : (r.below(4) == 0 ? 0 : r.below(3)))
                let seq = model.events.count
                batch.append((Int64(seq), SeriesTime.date(t)))
                model.events.append(.init(sequence: seq, time: t, original: nil, value: Int64(seq)))
                model.applyRetention()
            }
            try s.append(contentsOf: batch)
            #expect(try s.bounds().firstRetained == UInt64(model.cutoff), "step \(step)")
            if step % 40 == 39 { try check(&r, s, model, queries: 40, checked: &checked) }
            // Odd seeds settle the events so far into chunks (FORMAT.md §14.6) now and then, so
            // that queries, edits and retention meet chunks, event records and both at once.
            if seed % 2 == 1, step % 70 == 69 {
                try store.compact()
                try check(&r, s, model, queries: 40, checked: &checked)
            }
        }
        try check(&r, s, model, queries: 400, checked: &checked)
        if seed % 3 == 0 {
            try store.compact()
            try check(&r, s, model, queries: 100, checked: &checked)
        }
        #expect(checked > 0)
    }

    func check(_ r: inout SplitMix64, _ s: TimeSeries<Int64>, _ model: SeriesModel, queries: Int, checked: inout Int) throws {
        for _ in 0..<queries {
            let q = randomQuery(&r, model)
            let expected = model.run(q)
            let result = try s.query(q)
            let got = result.events.map { Int($0.sequence) }
            #expect(got == expected.0, "\(q)")
            #expect(result.selectedCount == expected.1, "\(q)")
            #expect(result.isComplete == (expected.0.count == expected.1))
            for e in result.events {
                let m = model.events[Int(e.sequence)]
                #expect(e.value == m.value && SeriesTime.milliseconds(e.timestamp) == m.time)
                #expect(e.originalEvent?.sequence == m.original.map(UInt64.init))
            }
            // The columnar read of the same query: the same events, column by column.
            let columns = try s.columns(q)
            #expect(columns.selectedCount == result.selectedCount && columns.count == result.events.count, "columns \(q)")
            #expect((0..<columns.count).map { columns.event(at: $0) } == result.events, "columns \(q)")
            #expect(columns.timestamps == result.events.map { SeriesTime.milliseconds($0.timestamp)! }, "columns \(q)")
            #expect(columns.edits.map(\.index) == result.events.indices.filter { result.events[$0].isEditEvent }, "columns \(q)")
            checked += 1
        }
    }

    @Test("the examples of API.md on a series of 200 originals")
    func documentedExamples() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("x", of: Int64.self)
        try s.append(contentsOf: (0..<200).map { (value: Int64($0), timestamp: SeriesTime.date(Self.base + Int64($0) * 10)) })
        func seqs(_ q: RangeQuery) throws -> [UInt64] { try s.query(q).events.map(\.sequence) }
        #expect(try seqs(.values.from(sequence: 100).to(sequence: 150)) == Array(100...150))
        #expect(try seqs(.values.fromStart().next(100)) == Array(0..<100))
        #expect(try seqs(.values.from(sequence: 5).next(3)) == [5, 6, 7, 8])
        #expect(try seqs(.values.from(sequence: 10).previous(3)) == [7, 8, 9, 10])
        #expect(try seqs(.values.fromLast(3)) == [197, 198, 199])
        #expect(try seqs(.values.untilLast(197)) == [0, 1, 2])
        #expect(try seqs(.values.from(sequence: 150).to(sequence: 148)) == [148, 149, 150])
        #expect(try seqs(.values.fromStart().toStart()) == [])
        #expect(try seqs(.values.from(sequence: 0).toStart()) == [0])
        #expect(try seqs(.values.from(SeriesTime.date(Self.base + 15)).next(.milliseconds(20))) == [2, 3])
        #expect(try seqs(.values.fromLast(.milliseconds(20))) == [197, 198, 199])
        let limited = try s.query(.values.limit(5))
        #expect(limited.events.map(\.sequence) == [195, 196, 197, 198, 199])
        #expect(limited.selectedCount == 200 && !limited.isComplete)
        let empty = try store.timeSeries("empty", of: Int64.self)
        let r = try empty.query(.values.fromLast(5))
        #expect(r.events.isEmpty && r.selectedCount == 0 && r.isComplete)
        #expect(try empty.latest() == nil)
    }

    @Test("a span ending on a timestamp shared by the anchor's event runs forward over the rest of its run")
    func spanOnSharedTimestamp() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        defer { try? store.close() }
        let s = try store.timeSeries("dup", of: Int64.self)
        let t = SeriesTime.date(Self.base)
        for v: Int64 in [10, 11, 12] { try s.append(v, timestamp: t) }
        func seqs(_ q: RangeQuery) throws -> [UInt64] { try s.query(q).events.map(\.sequence) }
        #expect(try seqs(.values.fromLast(2).untilLast(.milliseconds(0))) == [1, 2])
        #expect(try seqs(.values.fromLast(2).untilLast(.zero)) == seqs(.values.fromLast(2)))
        #expect(try seqs(.values.from(sequence: 1).to(t)) == [1, 2])
        #expect(try seqs(.values.from(sequence: 2).to(t)) == [2])
        #expect(try seqs(.values.from(sequence: 0).to(t)) == [0, 1, 2])
        #expect(try seqs(.values.from(t).to(t)) == [0, 1, 2])
        // A date before the run's time still runs backwards, over the whole run down to it.
        #expect(try seqs(.values.from(sequence: 1).to(SeriesTime.date(Self.base - 1))) == [0, 1])
        // The same with an edit retained (the general, walking path).
        try s.edit(originalSequence: 0, value: 13)
        #expect(try seqs(.edits(.all).fromLast(2).untilLast(.zero)) == [2, 3])
        #expect(try seqs(.edits(.all).from(sequence: 1).to(t)) == [1, 2])  // the edit came later
        #expect(try seqs(.values.from(sequence: 1).to(t)) == [1, 2])
    }

    @Test("extreme counts, durations and dates: clamped where the meaning is clear, else invalidArgument")
    func extremeArguments() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        let store = try openStore(dir, clock: clock)
        defer { try? store.close() }
        let plain = try store.timeSeries("plain", of: Int64.self)
        let edited = try store.timeSeries("edited", of: Int64.self)
        var model = SeriesModel()
        for i in 0..<12 {
            let t = Self.base + Int64(i / 3)  // runs of three events per timestamp
            try plain.append(Int64(i), timestamp: SeriesTime.date(t))
            try edited.append(Int64(i), timestamp: SeriesTime.date(t))
            model.events.append(.init(sequence: i, time: t, original: nil, value: Int64(i)))
        }
        var editedModel = model
        clock.set(Self.base + 3)
        try edited.edit(originalSequence: 4, value: 99)
        editedModel.events.append(.init(sequence: 12, time: Self.base + 3, original: 4, value: 99))
        #expect(try plain.query(.values.from(sequence: 5).next(Int.max)).events.map(\.sequence) == Array(5...11))
        #expect(try plain.query(.values.untilLast(Int.max)).events.isEmpty)
        #expect(try plain.query(.values.from(.distantFuture).toStart()).events.count == 12)
        #expect(try plain.query(.values.next(.seconds(Int64.max))).events.count == 12)

        let counts = [0, 1, 2, Int.max - 1, Int.max, -1, Int.min]
        let durations: [Duration] = [.zero, .milliseconds(1), .seconds(Int64.max), .seconds(Int64.max / 1000),
                                     Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
                                     .seconds(-1), .seconds(Int64.min), .nanoseconds(-1)]
        let dates: [Date] = [.distantPast, .distantFuture, Date(timeIntervalSince1970: 1e300),
                             Date(timeIntervalSince1970: -1e300), Date(timeIntervalSince1970: .infinity),
                             Date(timeIntervalSince1970: -.infinity), Date(timeIntervalSince1970: .nan),
                             SeriesTime.date(Self.base + 1)]
        let sequences: [UInt64] = [0, 1, 5, UInt64(Int64.max), .max - 1, .max]
        var anchors: [RangeQuery] = [.values.fromStart(), .edits(.all), .edits(.latest)]
        for n in counts { anchors.append(.values.fromLast(n)); anchors.append(.edits(.all).fromLast(n)) }
        for d in durations { anchors.append(.values.fromLast(d)) }
        for d in dates { anchors.append(.values.from(d)); anchors.append(.edits(.latest).from(d)) }
        for s in sequences { anchors.append(.values.from(sequence: s)) }
        var checked = 0, refused = 0
        for anchor in anchors {
            var queries: [RangeQuery] = [anchor, anchor.toStart()]
            for n in counts {
                queries += [anchor.next(n), anchor.previous(n), anchor.untilLast(n), anchor.limit(n)]
            }
            for d in durations { queries += [anchor.next(d), anchor.previous(d), anchor.untilLast(d)] }
            for d in dates { queries.append(anchor.to(d)) }
            for s in sequences { queries.append(anchor.to(sequence: s)) }
            for q in queries {
                for (series, m) in [(plain, model), (edited, editedModel)] {
                    if invalid(q) {
                        #expect(throws: StrataError.self, "\(q)") { try series.query(q) }
                        do { _ = try series.query(q) } catch let StrataError.invalidArgument(_, message) {
                            #expect(message.contains("RangeQuery"), "\(message)")
                        } catch { Issue.record("\(q): \(error)") }
                        refused += 1
                        continue
                    }
                    let expected = m.run(q)
                    let result = try series.query(q)
                    #expect(result.events.map { Int($0.sequence) } == expected.0, "\(q)")
                    #expect(result.selectedCount == expected.1, "\(q)")
                    checked += 1
                }
            }
        }
        #expect(checked > 1000 && refused > 100)
    }

    /// Whether `q` holds a negative count or duration or a NaN date.
    func invalid(_ q: RangeQuery) -> Bool {
        func bad(_ d: Duration) -> Bool { d < .zero }
        switch q.anchor {
        case .last(let n) where n < 0: return true
        case .lastDuration(let d) where bad(d): return true
        case .date(let d) where d.timeIntervalSince1970.isNaN: return true
        default: break
        }
        switch q.span {
        case .untilLast(let n), .next(let n), .previous(let n): if n < 0 { return true }
        case .untilLastDuration(let d), .nextDuration(let d), .previousDuration(let d): if bad(d) { return true }
        case .toDate(let d): if d.timeIntervalSince1970.isNaN { return true }
        default: break
        }
        if let l = q.limitCount, l < 0 { return true }
        return false
    }
}
