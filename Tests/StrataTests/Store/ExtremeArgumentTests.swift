import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Every public entry point that takes a number, fed extreme values (0, 1, max, min, max − 1,
// negative ones, huge and non-finite dates and doubles, extreme durations): each call returns or
// throws a `StrataError` — never traps. A trap kills the test process; with STRATA_EXTREME_LOG=1
// the case about to run is written to standard error first, so the log names it (off by default:
// it is some 14,000 lines).

private enum Extremes {
    static let ints: [Int] = [0, 1, 2, -1, -2, 99, 100, 101, Int.max, Int.max - 1, Int.min, Int.min + 1,
                              Int(Int32.max), 1 << 32, 1 << 62]
    static let uint64s: [UInt64] = [0, 1, 2, 3, UInt64.max, UInt64.max - 1, UInt64.max - 2, 1 << 63, (1 << 63) - 1,
                                    UInt64(Int64.max) + 1]
    static let durations: [Duration] = [
        .zero, .nanoseconds(1), .nanoseconds(99), .nanoseconds(100), .milliseconds(1), .seconds(1), .seconds(-1),
        .nanoseconds(-1), .seconds(Int64.max), .seconds(Int64.min), .seconds(Int64.max / 1_000),
        Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
        Duration(secondsComponent: Int64.min, attosecondsComponent: -999_999_999_999_999_999),
        Duration(secondsComponent: 1, attosecondsComponent: -1),
        Duration(secondsComponent: -1, attosecondsComponent: 1),
    ]
    static let intervals: [Double] = [0, -0.0, 1e-9, 1e-3, 1, -1, 1e9, 1e12, 1e15, 1e16, 1.8e12, 9.2e15, 1e17, 1e18,
                                      1e300, -1e300, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                                      .leastNonzeroMagnitude, .infinity, -.infinity, .nan]
    static let dates: [Date] = intervals.map { Date(timeIntervalSince1970: $0) }
        + [.distantPast, .distantFuture, Date(timeIntervalSinceReferenceDate: .greatestFiniteMagnitude)]
    static let timetokens: [Timetoken?] = [nil] + uint64s.map { Timetoken($0) }
    /// Whether each case is named on standard error before it runs.
    static let logCases = ProcessInfo.processInfo.environment["STRATA_EXTREME_LOG"] == "1"
}

/// Runs `body`, which may return or throw a `StrataError`; anything else fails the test.
private func survive(_ label: @autoclosure () -> String, _ body: () throws -> Void) {
    let name = label()
    if Extremes.logCases { FileHandle.standardError.write(Data("extreme: \(name)\n".utf8)) }
    do {
        try body()
    } catch is StrataError {
        // Typed: fine.
    } catch {
        Issue.record("\(name) threw a non-Strata error: \(error)")
    }
}

/// Runs `body`, which must throw `.invalidArgument` naming `argument`.
private func refuses(_ label: @autoclosure () -> String, naming argument: String, _ body: () throws -> Void) {
    let name = label()
    if Extremes.logCases { FileHandle.standardError.write(Data("extreme: \(name)\n".utf8)) }
    do {
        try body()
        Issue.record("\(name) was accepted")
    } catch StrataError.invalidArgument(let named, let what) {
        #expect(named == argument, "\(name): the error names the argument \(named), not \(argument)")
        #expect(what.contains(argument), "\(name): the error \"\(what)\" does not name \(argument)")
    } catch {
        Issue.record("\(name) threw \(error), not invalidArgument")
    }
}

@Suite(.serialized) struct ExtremeArgumentTests {
    // MARK: Timetoken

    @Test func timetokenArithmeticSaturates() {
        for a in Extremes.uint64s {
            for b in Extremes.uint64s {
                let (sum, up) = a.addingReportingOverflow(b)
                #expect((Timetoken(a) + b).rawValue == (up ? .max : sum))
                #expect((Timetoken(a) - b).rawValue == (a >= b ? a - b : 0))
            }
            _ = Timetoken(a).date
            _ = Timetoken(a).description
            #expect(!(Timetoken(a) < Timetoken(a)))
        }
    }

    @Test func timetokenOfAnyDate() throws {
        for d in Extremes.dates {
            let tt = Timetoken(date: d)
            let seconds = d.timeIntervalSince1970
            if !(seconds > 0) { #expect(tt == .zero, "\(seconds)") }
            if seconds >= 2e12 { #expect(tt.rawValue == .max, "\(seconds)") }
            _ = tt.date
        }
        // A date just past the largest timetoken saturates; one just below it does not.
        #expect(Timetoken(date: Date(timeIntervalSince1970: 1_844_674_407_370.956)).rawValue == .max)
        #expect(Timetoken(date: Date(timeIntervalSince1970: 1_844_674_407_000)).rawValue < .max)
        for v in Extremes.uint64s {
            let data = try JSONEncoder().encode(Timetoken(v))
            #expect(try JSONDecoder().decode(Timetoken.self, from: data) == Timetoken(v))
        }
    }

    @Test func durationsInTimetokenUnits() {
        for d in Extremes.durations {
            let units = Timetoken.units(of: d)
            let positive = d >= .nanoseconds(100)
            #expect((units != nil) == positive, "\(d)")
        }
        #expect(Timetoken.units(of: .seconds(Int64.max)) == .max)
        #expect(Timetoken.units(of: .nanoseconds(100)) == 1)
    }

    // MARK: Store options

    @Test func storeOptionsOutOfRangeAreRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let url = URL(fileURLWithPath: dir.path)
        let settings: [(String, WritableKeyPath<StoreOptions, Int>, ClosedRange<Int>)] = [
            ("blockSize", \.blockSize, (1 << 10)...(4 << 20)),
            ("memtableSize", \.memtableSize, (64 << 10)...(4 << 30)),
            ("segmentSize", \.segmentSize, (64 << 10)...(16 << 30)),
            ("cacheSize", \.cacheSize, 0...Int.max),
            ("bloomBitsPerKey", \.bloomBitsPerKey, 0...32),
        ]
        for (name, path, valid) in settings {
            for v in Extremes.ints + [valid.lowerBound, valid.upperBound, valid.lowerBound - 1, valid.upperBound &+ 1] {
                var options = StoreOptions()
                options[keyPath: path] = v
                if valid.contains(v) {
                    // Only the small valid values get a real store: a 4 GiB memtable is fine to
                    // accept but not to fill here.
                    survive("open with \(name) \(v)") {
                        let store = try Store.open(at: url, options: options)
                        try store.put([1], [2])
                        #expect(try store.get([1]) == [2])
                        try store.close()
                    }
                } else {
                    refuses("open with \(name) \(v)", naming: name) { _ = try Store.open(at: url, options: options) }
                }
            }
        }
        for v in Extremes.durations + [.microseconds(999), .seconds(60), .seconds(60) + .nanoseconds(1)] {
            var options = StoreOptions(durability: .buffered)
            options.syncInterval = v
            if v >= .milliseconds(1) && v <= .seconds(60) {
                survive("open with syncInterval \(v)") { try Store.open(at: url, options: options).close() }
            } else {
                refuses("open with syncInterval \(v)", naming: "syncInterval") { _ = try Store.open(at: url, options: options) }
            }
        }
        // A clock at an extreme date: writes still get timetokens and timestamps or typed errors.
        for d in Extremes.dates {
            var options = StoreOptions()
            options.clock = { d }
            survive("store clock at \(d.timeIntervalSince1970)") {
                let store = try Store.open(at: url, options: options)
                defer { try? store.close() }
                let room = try store.channel("clock", of: String.self)
                survive("publish at \(d.timeIntervalSince1970)") { _ = try room.publish("x") }
                survive("history at \(d.timeIntervalSince1970)") { _ = try room.history() }
                let series = try store.timeSeries("clock", of: Int.self)
                survive("append at \(d.timeIntervalSince1970)") { _ = try series.append(1) }
                let docs = try store.documents("clock")
                survive("save at \(d.timeIntervalSince1970)") { _ = try docs.save(Document(id: "a")) }
            }
            try Store.destroy(at: url)
        }
    }

    // MARK: Key-value

    @Test func keyValueLimits() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: URL(fileURLWithPath: dir.path))
        defer { try? store.close() }
        for i in 0..<5 { try store.put([UInt8(i)], [UInt8(i)]) }
        for limit in Extremes.ints {
            for reverse in [false, true] {
                if limit < 0 {
                    refuses("scan limit \(limit)", naming: "limit") { _ = try store.scan(reverse: reverse, limit: limit) }
                } else {
                    survive("scan limit \(limit)") {
                        let n = try store.scan(reverse: reverse, limit: limit).count
                        #expect(n == min(limit, 5))
                    }
                }
            }
        }
    }

    // MARK: History

    @Test(arguments: [1, 2, 3] as [UInt64])
    func historyEntryPoints(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: URL(fileURLWithPath: dir.path))
        defer { try? store.close() }
        let room = try store.channel("room", of: String.self)
        let tokens = try room.publish(contentsOf: (0..<8).map { "m\($0)" })
        var rng = SplitMix64(seed: seed)
        // Timetokens near the channel's, besides the extremes.
        let near = tokens.flatMap { [Timetoken?]($0 == .zero ? [$0] : [$0, $0 - 1, $0 + 1]) }
        let bounds = Extremes.timetokens + near
        for _ in 0..<400 {
            let start = bounds[rng.below(bounds.count)]
            let end = bounds[rng.below(bounds.count)]
            let limit = Extremes.ints[rng.below(Extremes.ints.count)]
            let reverse = rng.chance(500)
            let label = "history start \(String(describing: start)) end \(String(describing: end)) limit \(limit)"
            if (1...HistoryPage<String>.maximumLimit).contains(limit) {
                survive(label) { _ = try room.history(start: start, end: end, limit: limit, reverse: reverse) }
            } else {
                refuses(label, naming: "limit") { _ = try room.history(start: start, end: end, limit: limit, reverse: reverse) }
            }
        }
        for since in bounds.compactMap({ $0 }) {
            survive("messageCount since \(since)") {
                let n = try room.messageCount(since: since)
                #expect(n == tokens.filter { $0 > since }.count)
            }
            survive("messageCounts since \(since)") {
                _ = try store.messageCounts(channels: ["room", "missing"], since: [since])
                _ = try store.messageCounts(channels: ["room", "missing"], since: [since, since])
            }
        }
        for limit in Extremes.ints {
            if (1...HistoryPage<String>.maximumLimit).contains(limit) {
                survive("fetchHistory limit \(limit)") { _ = try store.fetchHistory(channels: ["room", "nope"], limit: limit) }
            } else {
                refuses("fetchHistory limit \(limit)", naming: "limit") { _ = try store.fetchHistory(channels: ["room"], limit: limit) }
            }
            if limit >= 1 {
                survive("messages bufferSize \(limit)") { _ = try room.messages(bufferSize: limit) }
            } else {
                refuses("messages bufferSize \(limit)", naming: "bufferSize") { _ = try room.messages(bufferSize: limit) }
            }
        }
        // Deletions with extreme bounds, each on a fresh channel; the remaining messages match
        // what history shows.
        for i in 0..<60 {
            let ch = try store.channel("del-\(seed)-\(i)", of: String.self)
            let tts = try ch.publish(contentsOf: ["a", "b", "c"])
            let pool = Extremes.timetokens + tts.flatMap { [$0, $0 - 1, $0 + 1] }
            let start = pool[rng.below(pool.count)], end = pool[rng.below(pool.count)]
            survive("deleteMessages start \(String(describing: start)) end \(String(describing: end))") {
                let shown = try ch.history(start: start, end: end, limit: 100).messages.map(\.timetoken)
                try ch.deleteMessages(start: start, end: end)
                let left = try ch.history(limit: 100).messages.map(\.timetoken)
                #expect(left == tts.filter { !shown.contains($0) })
                #expect(try ch.messageCount(since: .zero) == left.count)
            }
        }
    }

    @Test func channelOptionsExtremes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: URL(fileURLWithPath: dir.path))
        defer { try? store.close() }
        var n = 0
        for limit in [nil] + Extremes.ints.map(Optional.some) {
            for retention in [nil] + Extremes.durations.map(Optional.some) {
                n += 1
                let options = ChannelOptions(retention: retention, limit: limit)
                let label = "channel options limit \(String(describing: limit)) retention \(String(describing: retention))"
                let badLimit = limit.map { $0 < 1 } ?? false
                let badRetention = retention.map { $0 < .nanoseconds(100) } ?? false
                if badLimit || badRetention {
                    refuses(label, naming: badRetention ? "retention" : "limit") {
                        _ = try store.channel("o\(n)", of: Int.self, options: options)
                    }
                    continue
                }
                survive(label) {
                    let ch = try store.channel("o\(n)", of: Int.self, options: options)
                    _ = try ch.publish(contentsOf: [1, 2, 3])
                    let page = try ch.history(limit: 100)
                    #expect(page.messages.count <= min(limit ?? 3, 3))
                    _ = try ch.messageCount(since: .zero)
                    // Reopen with other extreme options: replaces them.
                    _ = try store.channel("o\(n)", of: Int.self, options: ChannelOptions(retention: .nanoseconds(100), limit: 1))
                    #expect(try ch.history(limit: 100).messages.count <= 1)
                }
            }
        }
    }

    // MARK: Time series

    @Test(arguments: [1, 2] as [UInt64])
    func timeSeriesEntryPoints(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: URL(fileURLWithPath: dir.path))
        defer { try? store.close() }
        let series = try store.timeSeries("s", of: Int.self)
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        for i in 0..<6 { try series.append(i, timestamp: base.addingTimeInterval(Double(i))) }
        try series.edit(originalSequence: 2, value: 20)
        for s in Extremes.uint64s {
            survive("edit originalSequence \(s)") { _ = try series.edit(originalSequence: s, value: 1) }
            survive("edit originalSequence \(s) with author") { _ = try series.edit(originalSequence: s, value: 1, author: "a") }
        }
        // Extreme timestamps: on a fresh series each, since a later timestamp blocks earlier ones.
        for (i, d) in Extremes.dates.enumerated() {
            let fresh = try store.timeSeries("t\(seed)-\(i)", of: Int.self)
            survive("append timestamp \(d.timeIntervalSince1970)") { _ = try fresh.append(1, timestamp: d) }
            survive("append timestamp \(d.timeIntervalSince1970) author") { _ = try fresh.append(1, timestamp: d, author: "a") }
            survive("append contentsOf timestamp \(d.timeIntervalSince1970)") {
                _ = try fresh.append(contentsOf: [(value: 1, timestamp: d), (value: 2, timestamp: d)])
            }
            // A NaN date in a query: in timeSeriesQueriesAtTheExtremes.
            if !d.timeIntervalSince1970.isNaN {
                survive("query from date \(d.timeIntervalSince1970)") {
                    _ = try series.query(RangeQuery.values.from(d).next(2))
                    _ = try series.query(RangeQuery.values.fromStart().to(d))
                }
            }
        }
        // Queries with every extreme but huge counts and NaN dates (timeSeriesQueriesAtTheExtremes).
        try Self.randomQueries(of: [series, try Self.plainSeries(store)], seed: seed, count: 600,
                               counts: Extremes.ints.filter { $0 < 1 << 30 },
                               dates: Extremes.dates.filter { !$0.timeIntervalSince1970.isNaN })
    }

    /// RangeQuery with every extreme count and date: counts, durations and dates at the ends of
    /// their types (`next(Int.max)`, `untilLast(Int.max)`, a NaN date) once trapped.
    @Test(arguments: [3, 4] as [UInt64])
    func timeSeriesQueriesAtTheExtremes(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: URL(fileURLWithPath: dir.path))
        defer { try? store.close() }
        let edited = try store.timeSeries("s", of: Int.self)
        for i in 0..<6 { try edited.append(i, timestamp: Date(timeIntervalSince1970: 1_700_000_000 + Double(i))) }
        try edited.edit(originalSequence: 2, value: 20)
        try Self.randomQueries(of: [edited, try Self.plainSeries(store)], seed: seed, count: 1_000,
                               counts: Extremes.ints, dates: Extremes.dates)
    }

    /// A series of six events without edits (the reader's fast path).
    private static func plainSeries(_ store: Store) throws -> TimeSeries<Int> {
        let s = try store.timeSeries("plain", of: Int.self)
        if try s.bounds().count == 0 {
            for i in 0..<6 { try s.append(i, timestamp: Date(timeIntervalSince1970: 1_700_000_000 + Double(i))) }
        }
        return s
    }

    /// `count` random queries built from the extremes, each run on every series.
    private static func randomQueries(of series: [TimeSeries<Int>], seed: UInt64, count: Int,
                                      counts: [Int], dates: [Date]) throws {
        var rng = SplitMix64(seed: seed)
        let views: [RangeQuery] = [.values, .edits(.all), .edits(.latest)]
        for _ in 0..<count {
            var q = views[rng.below(views.count)]
            let int = { (rng: inout SplitMix64) in counts[rng.below(counts.count)] }
            let u = { (rng: inout SplitMix64) in Extremes.uint64s[rng.below(Extremes.uint64s.count)] }
            let dur = { (rng: inout SplitMix64) in Extremes.durations[rng.below(Extremes.durations.count)] }
            let date = { (rng: inout SplitMix64) in dates[rng.below(dates.count)] }
            var label = "query"
            switch rng.below(5) {
            case 0: q = q.fromStart(); label += " fromStart"
            case 1: let v = u(&rng); q = q.from(sequence: v); label += " from(sequence: \(v))"
            case 2: let v = date(&rng); q = q.from(v); label += " from(date \(v.timeIntervalSince1970))"
            case 3: let v = int(&rng); q = q.fromLast(v); label += " fromLast(\(v))"
            default: let v = dur(&rng); q = q.fromLast(v); label += " fromLast(\(v))"
            }
            switch rng.below(11) {
            case 0: let v = int(&rng); q = q.untilLast(v); label += ".untilLast(\(v))"
            case 1: let v = dur(&rng); q = q.untilLast(v); label += ".untilLast(\(v))"
            case 2: let v = u(&rng); q = q.to(sequence: v); label += ".to(sequence: \(v))"
            case 3: let v = date(&rng); q = q.to(v); label += ".to(date \(v.timeIntervalSince1970))"
            case 4: q = q.toStart(); label += ".toStart()"
            case 5: let v = int(&rng); q = q.next(v); label += ".next(\(v))"
            case 6: let v = dur(&rng); q = q.next(v); label += ".next(\(v))"
            case 7: let v = int(&rng); q = q.previous(v); label += ".previous(\(v))"
            case 8: let v = dur(&rng); q = q.previous(v); label += ".previous(\(v))"
            default: break
            }
            if rng.chance(500) { let v = int(&rng); q = q.limit(v); label += ".limit(\(v))" }
            for s in series { survive(label) { _ = try s.query(q) } }
        }
    }

    @Test func timeSeriesOptionsExtremes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: URL(fileURLWithPath: dir.path))
        defer { try? store.close() }
        var ranges: [RetainedRange] = [.all]
        var subscriptions: [SubscriptionRange] = [.latest, .none]
        for n in Extremes.ints {
            ranges.append(.limit(n))
            subscriptions.append(.limit(n))
            for d in Extremes.durations { ranges.append(.limit(n, last: d)) }
        }
        for d in Extremes.durations {
            ranges.append(.last(d))
            subscriptions.append(.last(d))
        }
        var n = 0
        for r in ranges {
            n += 1
            survive("retainedRange \(r)") {
                let s = try store.timeSeries("r\(n)", of: Int.self, options: TimeSeriesOptions(retainedRange: r))
                try s.append(contentsOf: [1, 2, 3])
                _ = try s.query(.values.fromStart())
                _ = try s.bounds()
            }
        }
        for sub in subscriptions {
            for size in Extremes.ints {
                n += 1
                survive("subscriptionRange \(sub) bufferSize \(size)") {
                    let s = try store.timeSeries("u\(n)", of: Int.self,
                                                 options: TimeSeriesOptions(subscriptionRange: sub, subscriberBufferSize: size))
                    try s.append(1)
                    _ = s.subscribe()
                }
            }
        }
    }

    // MARK: Documents

    @Test func documentEntryPoints() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: URL(fileURLWithPath: dir.path))
        defer { try? store.close() }
        let byValue = DocumentIndex(name: "byValue", version: "1", map: { doc, emit in emit(doc["v"] ?? .null, doc["v"]) },
                                    reduce: .count)
        let db = try store.documents("d", indexes: [byValue])
        let numbers: [JSON] = [.int(0), .int(1), .int(-1), .int(.max), .int(.min), .int(.max - 1), .int(.min + 1),
                               .double(0), .double(-0.0), .double(9_007_199_254_740_992), .double(Double(Int64.max)),
                               .double(Double(Int64.min)), .double(.greatestFiniteMagnitude),
                               .double(-.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude),
                               .double(.infinity), .double(.nan)]
            + Extremes.dates.map { JSON.date($0) }
        for (i, v) in numbers.enumerated() {
            survive("save number \(v)") { _ = try db.save(Document(id: "n\(i)", fields: ["v": v, "a": .array([v, v])])) }
        }
        survive("save attachment of 0 bytes") {
            var d = Document(id: "att")
            d.attachments["empty"] = Attachment(data: Data(), contentType: "")
            _ = try db.save(d)
        }
        for limit in [nil] + Extremes.ints.map(Optional.some) {
            for skip in Extremes.ints {
                for group in [nil, 0, 1, -1, Int.max, Int.min] as [Int?] {
                    for reduce in [nil, false, true] as [Bool?] {
                        var q = IndexQuery.all
                        q.limit = limit
                        q.skip = skip
                        q.groupLevel = group
                        q.reduce = reduce
                        q.descending = skip % 2 == 0
                        let label = "index query limit \(String(describing: limit)) skip \(skip) group \(String(describing: group)) reduce \(String(describing: reduce))"
                        let bad = (limit ?? 0) < 0 ? "limit" : skip < 0 ? "skip"
                            : (group ?? 0) < 0 || (group != nil && reduce == false) ? "groupLevel" : nil
                        if let bad {
                            refuses(label, naming: bad) { _ = try db.query("byValue", q) }
                        } else {
                            survive(label) {
                                let rows = try db.query("byValue", q).rows.count
                                #expect(rows <= (limit ?? Int.max))
                            }
                        }
                    }
                }
            }
        }
        for since in Extremes.uint64s {
            for limit in Extremes.ints {
                if limit < 0 {
                    refuses("changes since \(since) limit \(limit)", naming: "limit") { _ = try db.changes(since: since, limit: limit) }
                } else {
                    survive("changes since \(since) limit \(limit)") {
                        let (changes, last) = try db.changes(since: since, limit: limit)
                        #expect(changes.count <= limit && last >= since)
                    }
                }
            }
        }
    }
}
