// The README's main job: one store in a temporary directory, and the product on it — a time
// series (appends, edits, range queries), a channel's message history (publishes, paging),
// a document database with a map/reduce index (saves, index queries), raw key-value data and
// sessions checked against a security policy — each step timed and checked; then the store is
// closed, reopened, compacted and closed.
// Scripts/quickstart then shows `strata-dump summary` of the store and runs the bench.
import Foundation
import Strata

// MARK: Printing

/// `1234567` as `1,234,567`.
func grouped(_ n: Int) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return n < 0 ? "-" + out : out
}

/// `n` and the noun, singular or plural.
func counted(_ n: Int, _ one: String, _ many: String) -> String { "\(grouped(n)) \(n == 1 ? one : many)" }

func seconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// Runs `body`, timed by the wall clock; prints one line: what, how long, and how many `unit`s a
/// second for a step of `count` > 1.
@discardableResult
func step<T>(_ what: String, count: Int, unit: String, _ body: () throws -> T) throws -> T {
    let start = ContinuousClock.now
    let result = try body()
    let t = seconds(since: start)
    var line = "  " + what.padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%7.3f s", t)
    if count > 1, t > 0 { line += "  " + grouped(Int((Double(count) / t).rounded())).leftPadded(12) + " \(unit)/s" }
    print(line)
    return result
}

/// Prints a checked fact; a wrong answer ends the run with exit status 1.
func check(_ ok: Bool, _ what: String) {
    print("  \(ok ? "ok" : "FAILED"): \(what)")
    if !ok { exit(1) }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

// MARK: The data

/// A deterministic price walk: the same run every time.
struct Walk {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var price = 100.0
    mutating func next() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        price += Double(Int(state >> 33) % 201 - 100) / 1_000
        return (price * 1_000).rounded() / 1_000
    }
}

struct ChatMessage: Codable, Sendable, Equatable {
    var user: String
    var text: String
}

let users = ["ada", "grace", "edsger", "barbara", "donald", "frances", "ken", "margaret"]
let customers = (0..<100).map { "customer-\(String($0).leftPadded(2).replacingOccurrences(of: " ", with: "0"))" }
let months = (1...12).map { "2026-\($0 < 10 ? "0" : "")\($0)" }

/// The index of the documents step: one row per invoice, summed by the reduce.
let totalByCustomerAndMonth = DocumentIndex(name: "TotalByCustomerAndMonth", version: "1", map: { doc, emit in
    if let customer = doc["customer"], let month = doc["month"] { emit([customer, month], doc["total"]) }
}, reduce: .sum)

func kvKey(_ i: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(i).bigEndian) { Array("user/".utf8) + Array($0) }
}

func kvValue(_ i: Int) -> [UInt8] { Array("value of record \(i) ...padding".utf8) }

// MARK: The run

let scale = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 200_000
guard scale >= 10_000 else {
    FileHandle.standardError.write("usage: strata-quickstart [events, at least 10000; default 200000]\n".data(using: .utf8)!)
    exit(2)
}
let eventCount = scale / 4_000 * 4_000            // time-series events (so that every step has whole batches)
let messageCount = eventCount / 2                 // channel messages published in batches
let documentCount = eventCount / 4                // documents
let recordCount = eventCount                      // key-value records
let directory = FileManager.default.temporaryDirectory
    .appendingPathComponent("strata-quickstart-\(ProcessInfo.processInfo.processIdentifier)")

var options = StoreOptions(durability: .buffered)
options.principal = "quickstart"
options.memtableSize = 8 << 20  // small, so that the run shows flushes and compactions

print("Strata quick start: one store in \(directory.path)")
print("  durability .buffered (a write returns once the OS has it; the log is synced every 100 ms")
print("  and on close), 8 MiB memtables. Times are wall clock; each line is one timed step.")

do {
    var store = try Store.open(at: directory, options: options)

    // MARK: Time series
    print("\nTime series \"prices/ACME\" of Double: one event a second from 2026-01-01T00:00:00Z")
    let prices = try store.timeSeries("prices/ACME", of: Double.self)
    let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
    var walk = Walk()
    var values: [Double] = []
    values.reserveCapacity(eventCount)
    for _ in 0..<eventCount { values.append(walk.next()) }
    try step("append \(grouped(eventCount)) events, 1,000 per atomic batch", count: eventCount, unit: "events") {
        for first in stride(from: 0, to: eventCount, by: 1_000) {
            try prices.append(contentsOf: (first..<first + 1_000).map {
                (value: values[$0], timestamp: start.addingTimeInterval(Double($0)))
            })
        }
    }
    let editCount = min(1_000, eventCount / 10)
    let editStride = eventCount / editCount
    try step("edit \(grouped(editCount)) events, one edit event each", count: editCount, unit: "edits") {
        for k in 0..<editCount {
            try prices.edit(originalSequence: UInt64(k * editStride), value: -values[k * editStride])
        }
    }
    let queries = min(1_000, eventCount / 100)
    var rng = Walk(state: 42)
    let returned = try step("\(grouped(queries)) queries .values.from(sequence:).next(999)", count: queries * 1_000,
                            unit: "events") { () -> Int in
        var n = 0
        for _ in 0..<queries {
            _ = rng.next()
            let s = UInt64(Int(rng.state >> 20) % (eventCount - 1_000))
            let result = try prices.query(RangeQuery.values.from(sequence: s).next(999))
            n += result.events.count
        }
        return n
    }
    check(returned == queries * 1_000, "every range query returned 1,000 events")
    let hourStart = eventCount / 2 / 3_600 * 3_600   // a whole hour in the middle of the series
    let hourDate = start.addingTimeInterval(Double(hourStart))
    let hour = try step("one hour: .values.from(date).next(.seconds(3600))", count: 3_601, unit: "events") {
        try prices.query(RangeQuery.values.from(hourDate).next(.seconds(3_600)))
    }
    check(hour.events.count == 3_601 && hour.events.first.map { $0.originalEvent?.sequence ?? $0.sequence } == UInt64(hourStart),
          "the hour from \(ISO8601DateFormatter().string(from: hourDate)) is events \(grouped(hourStart))…"
          + "\(grouped(hourStart + 3_600)) (3,601: both ends are included)")
    let merged = try prices.query(RangeQuery.values.fromStart())
    let edited = merged.events.filter(\.isEditEvent)
    check(merged.events.count == eventCount && edited.count == editCount
          && edited.allSatisfy { e in e.originalEvent.map { e.value == -values[Int($0.sequence)] } ?? false },
          "the values view holds \(grouped(eventCount)) events, the \(grouped(editCount)) edited ones as their edit")
    let all = try prices.query(RangeQuery.edits(.all).fromStart())
    check(all.events.count == eventCount + editCount, "the edits(.all) view holds all \(grouped(eventCount + editCount)) events")
    if let latest = try prices.latest() {
        let what = latest.originalEvent.map { "an edit of event \($0.sequence)" } ?? "an original"
        print("  latest: sequence \(latest.sequence), value \(latest.value), \(what), by \(latest.author)")
    }

    // MARK: Message history
    print("\nChannel \"chat.lobby\" of ChatMessage { user, text }")
    let lobby = try store.channel("chat.lobby", of: ChatMessage.self)
    let published = try step("publish \(grouped(messageCount)) messages, 1,000 per atomic batch", count: messageCount,
                             unit: "messages") { () -> [Timetoken] in
        var tts: [Timetoken] = []
        tts.reserveCapacity(messageCount)
        for first in stride(from: 0, to: messageCount, by: 1_000) {
            let user = users[first / 1_000 % users.count]
            tts += try lobby.publish(contentsOf: (first..<first + 1_000).map {
                ChatMessage(user: user, text: "message \($0) of the quick start")
            }, publisher: user)
        }
        return tts
    }
    let singles = min(1_000, messageCount / 10)
    try step("publish \(grouped(singles)) messages one at a time", count: singles, unit: "messages") {
        for i in 0..<singles { try lobby.publish(ChatMessage(user: "ada", text: "single \(i)")) }
    }
    let total = messageCount + singles
    var pages = 0
    var seen = 0
    var ordered = true
    try step("page back through all: history(start:limit:100)", count: total, unit: "messages") {
        var page = try lobby.history(limit: 100)
        var previousOldest: Timetoken?
        while true {
            pages += 1
            seen += page.messages.count
            if let previousOldest, let newest = page.end, newest >= previousOldest { ordered = false }
            if zip(page.messages, page.messages.dropFirst()).contains(where: { $0.timetoken >= $1.timetoken }) { ordered = false }
            guard page.hasMore, let oldest = page.start else { break }
            previousOldest = oldest
            page = try lobby.history(start: oldest, limit: 100)
        }
    }
    check(seen == total && ordered, "\(grouped(pages)) pages held all \(grouped(total)) messages, each once, in timetoken order")
    let middle = published[messageCount / 2]
    let newer = try step("count the newer half: messageCount(since:)", count: total - messageCount / 2 - 1,
                         unit: "messages") {
        try lobby.messageCount(since: middle)
    }
    check(newer == total - messageCount / 2 - 1, "\(grouped(newer)) messages are newer than message \(grouped(messageCount / 2))")
    if let oldest = try lobby.history(limit: 1, reverse: true).messages.first {
        print("  oldest: timetoken \(oldest.timetoken) (\(ISO8601DateFormatter().string(from: oldest.timetoken.date))), "
              + "\(oldest.publisher ?? "-"): \(oldest.message.text)")
    }

    // MARK: Documents
    print("\nDocument database \"shop\" with index \"TotalByCustomerAndMonth\": key [customer, month], value total, reduce .sum")
    let shop = try store.documents("shop", indexes: [totalByCustomerAndMonth])
    var expected: [String: Int64] = [:]
    var documents: [Document] = []
    documents.reserveCapacity(documentCount)
    for i in 0..<documentCount {
        let customer = customers[(i * 7) % customers.count]
        let total = Int64(10 + (i * 37) % 1_990)
        expected[customer, default: 0] += total
        var doc = Document(id: "invoice-\(i)", fields: [
            "number": .string("A-\(i)"), "customer": .string(customer), "month": .string(months[i % months.count]),
            "total": .int(total), "lines": .int(Int64(1 + i % 5)), "paid": .bool(i % 3 == 0),
        ])
        doc.metadata.type = "invoice"
        documents.append(doc)
    }
    try step("save \(grouped(documentCount)) documents, 1,000 per atomic batch", count: documentCount, unit: "documents") {
        for first in stride(from: 0, to: documentCount, by: 1_000) {
            try shop.save(contentsOf: Array(documents[first..<min(first + 1_000, documentCount)]))
        }
    }
    var perCustomer = IndexQuery.all
    perCustomer.groupLevel = 1
    let totals = try step("reduce: the total per customer (groupLevel 1)", count: documentCount, unit: "rows") {
        try shop.query("TotalByCustomerAndMonth", perCustomer)
    }
    check(totals.count == customers.count
          && totals.rows.allSatisfy { $0.value?.int64Value == expected[$0.key[0]?.stringValue ?? ""] },
          "\(totals.count) customers, each total equal to the sum of its invoices")
    let customerQueries = min(1_000, documentCount / 10)
    var rowsRead = 0
    try step("\(grouped(customerQueries)) queries of one customer's rows", count: customerQueries * documentCount / customers.count,
             unit: "rows") {
        for q in 0..<customerQueries {
            let customer = JSON.string(customers[q * 37 % customers.count])
            var query = IndexQuery.range(start: [customer], end: [customer, [:]])
            query.reduce = false
            rowsRead += try shop.query("TotalByCustomerAndMonth", query).count
        }
    }
    check(rowsRead == customerQueries * documentCount / customers.count, "every customer query returned its \(documentCount / customers.count) rows")
    let gets = min(10_000, documentCount)
    var found = 0
    try step("get \(grouped(gets)) documents by id", count: gets, unit: "documents") {
        for i in 0..<gets where try shop.document(id: "invoice-\((i * 7_919) % documentCount)") != nil { found += 1 }
    }
    check(found == gets, "every document read back")

    // MARK: Key-value
    print("\nRaw key-value data: 8-byte big-endian keys under \"user/\", ~32-byte values")
    try step("write \(grouped(recordCount)) records, 1,000 per WriteBatch", count: recordCount, unit: "records") {
        var batch = WriteBatch()
        for i in 0..<recordCount {
            batch.put(kvKey(i), kvValue(i))
            if batch.count == 1_000 {
                try store.write(batch)
                batch = WriteBatch()
            }
        }
        try store.write(batch)
    }
    var matched = 0
    try step("get every 7th record back", count: (recordCount + 6) / 7, unit: "gets") {
        for i in stride(from: 0, to: recordCount, by: 7) where try store.get(kvKey(i)) == kvValue(i) { matched += 1 }
    }
    check(matched == (recordCount + 6) / 7, "every value read back")
    var deletes = WriteBatch()
    deletes.deleteRange(from: kvKey(1_000), to: kvKey(2_000))
    try store.write(deletes)
    var scanned = 0
    try step("scan all, after deleting 1,000 by one deleteRange", count: recordCount - 1_000, unit: "records") {
        scanned = try store.cursor().reduce(0) { n, _ in n + 1 }
    }
    check(scanned == recordCount - 1_000, "\(grouped(scanned)) records scanned")

    // MARK: Sessions and permissions
    print("\nSessions and permissions: a policy stored in the store, checked on every session call")
    var policy = SecurityPolicy()
    policy.roles["trader"] = Role(global: [], paths: ["quotes": [.readTopic, .selectTopic, .updateTopic, .editOwnTimeSeriesEvents]])
    policy.principals["alice"] = ["trader"]
    policy.principals["bob"] = ["trader"]
    try store.setSecurityPolicy(policy)
    _ = try store.timeSeries("quotes/ACME", of: Double.self)   // the owner creates it; traders may not
    let alice = try store.session(principal: "alice").timeSeries("quotes/ACME", of: Double.self)
    let bob = try store.session(principal: "bob").timeSeries("quotes/ACME", of: Double.self)
    let quotes = 1_000
    try step("append \(grouped(quotes)) events as alice, each checked", count: quotes, unit: "events") {
        for i in 0..<quotes { try alice.append(100 + Double(i % 100) / 100) }
    }
    let bobs = try bob.append(99.5)
    let ownEdit = try alice.edit(originalSequence: 0, value: 100.01)
    var refused: [String] = []
    do { try alice.edit(originalSequence: bobs.sequence, value: 1) } catch StrataError.permissionDenied(_, let p, _) { refused.append(p.rawValue) }
    do { _ = try alice.query(.edits(.all)) } catch StrataError.permissionDenied(_, let p, _) { refused.append(p.rawValue) }
    do { _ = try store.session(principal: "eve").timeSeries("quotes/ACME", of: Double.self).latest() } catch StrataError.permissionDenied(_, let p, _) {
        refused.append(p.rawValue)
    }
    let authors = Set(try alice.query(.values).events.map(\.author))
    check(ownEdit.author == "alice" && bobs.author == "bob" && authors == ["alice", "bob"]
          && refused == ["EDIT_TIME_SERIES_EVENTS", "QUERY_OBSOLETE_TIME_SERIES_EVENTS", "READ_TOPIC"],
          "sessions write as their principal; alice edits her own event, not bob's; the edit view and eve's read are refused (\(refused.joined(separator: ", ")))")

    // MARK: Reopen and compact
    let stats = store.statistics
    print("\nThe store so far: \(counted(Int(stats.flushes), "flush", "flushes")) and "
          + "\(counted(Int(stats.compactions), "compaction", "compactions")) in the background, "
          + "\(counted(stats.sortedRuns, "sorted run", "sorted runs")), \(grouped(Int(stats.segmentBytes) >> 10)) KiB of segments")
    try step("close: sync the log, finish background work", count: 1, unit: "closes") { try store.close() }
    store = try step("reopen: replay the log the segments do not cover", count: 1, unit: "opens") {
        try Store.open(at: directory, options: options)
    }
    check(store.recovery.isClean, "recovery replayed \(counted(store.recovery.batchesReplayed, "batch", "batches")) from "
          + "\(counted(store.recovery.logsReplayed, "log", "logs")), nothing cut")
    let reopened = try store.timeSeries("prices/ACME", of: Double.self)
    let lastPage = try store.channel("chat.lobby", of: ChatMessage.self).history(limit: 1)
    let reopenedShop = try store.documents("shop", indexes: [totalByCustomerAndMonth])
    let grand = try reopenedShop.query("TotalByCustomerAndMonth", .all).rows.first?.value?.int64Value
    check(try reopened.bounds().next == UInt64(eventCount + editCount) && lastPage.messages.first?.message.text == "single \(singles - 1)"
          && grand == expected.values.reduce(0, +),
          "after reopening: \(grouped(eventCount + editCount)) events, the last message, the grand total \(grouped(Int(grand ?? 0)))")
    try step("compact everything into one sorted run", count: 1, unit: "compactions") { try store.compact() }
    try store.close()
    print("\nSTORE=\(directory.path)")
} catch {
    print("quickstart failed: \(error)")
    exit(1)
}
