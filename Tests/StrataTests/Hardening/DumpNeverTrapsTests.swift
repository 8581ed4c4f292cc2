import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: `strata-dump` reading hostile files prints a finding and never dies — properties or
// manifest counts of 2^64 − 1, a stored time of 2^63 − 1 ms, a NaN or infinite stored date.

@Suite struct DumpNeverTrapsTests {
    /// A closed store with one segment of a few key-value records.
    private static func segmentStore() throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        for i in 0..<10 { try store.put(Array("k\(i)".utf8), Array("v".utf8)) }
        try store.compact()
        return dir
    }

    @Test("summary: properties counts of 2^64 − 1 that overflow when added up are a finding, not a trap")
    func summaryPropertiesOverflow() throws {
        let dir = try Self.segmentStore()
        defer { dir.remove() }
        let segment = try #require(Hardening.segments(dir).first)
        try Hardening.rewriteProperties(dir, segment: segment) { p in
            p.keyBytes = .max
            p.valueBytes = .max
            // Two summaries of one keyspace, each claiming 2^64 − 1 key bytes: their sum overflows.
            var first = p.keyspaces[0], second = p.keyspaces[0]
            first.largestKey = first.smallestKey
            first.keyBytes = .max
            second.keyBytes = .max
            p.keyspaces = [first, second]
        }
        let summary = try StoreInspector.summary(ofStoreAt: dir.path)
        #expect(summary.problems.contains { $0.file == segment && $0.message.contains("overflow") }, "\(summary.problems)")
        Hardening.everyDumpVerb(dir)
    }

    @Test("summary: manifest entries whose records add up past 2^64 − 1 are a finding, not a trap")
    func summaryManifestOverflow() throws {
        let dir = try Self.segmentStore()
        defer { dir.remove() }
        try Hardening.rewriteManifest(dir) { m in
            var s = m.runs[0][0]
            s.records = .max
            m.runs = [[s, s]]
        }
        let summary = try StoreInspector.summary(ofStoreAt: dir.path)
        #expect(summary.problems.contains { $0.message.contains("overflow") }, "\(summary.problems)")
        Hardening.everyDumpVerb(dir)
    }

    @Test("push: a stored time of 2^63 − 1 ms (or −2^63) prints as itself, not a trap")
    func pushTimesAtTheLimits() throws {
        for t in [Int64.max, Int64.min] {
            let dir = try Hardening.pushStore()
            defer { dir.remove() }
            var w = PushLayout.Writer()
            w.varint(1)
            w.varint(1)
            w.u8(1)
            w.string("com.example")
            w.string("ab12")
            w.string("AAPL")
            w.string("{}")
            w.signed(t)
            var subscription = try #require(try Hardening.stored(dir, PushLayout.subscriptionKey(1)))
            // The status time is the record's last field (a zigzag varint): replace it.
            subscription.removeLast()
            while let last = subscription.last, last & 0x80 != 0 { subscription.removeLast() }
            Varint.append(ZigZag.encode(t), to: &subscription)
            try Hardening.writeRaw(dir, [(PushLayout.notificationKey(1), w.bytes), (PushLayout.subscriptionKey(1), subscription)])
            let push = try PushInspector.push(ofStoreAt: dir.path)
            #expect(push.outbox.first?.created == t)
            #expect(push.subscriptions.first?.statusTime == t)
            Hardening.everyDumpVerb(dir)
        }
    }

    @Test("documents: a NaN or infinite stored date is a finding naming the document, not a trap")
    func documentDates() throws {
        for bad in [Double.nan, .infinity, -.infinity] {
            let (dir, key) = try Hardening.oneDocumentStore()
            defer { dir.remove() }
            var value = try #require(try Hardening.stored(dir, key))
            // flags, revision 1, change sequence 1, then the two dates (FORMAT.md 16.2).
            #expect(value[1] == 1 && value[2] == 1)
            for at in [3, 11] { for i in 0..<8 { value[at + i] = UInt8(truncatingIfNeeded: bad.bitPattern >> (8 * UInt64(i))) } }
            try Hardening.writeRaw(dir, [(key, value)])
            let e = Hardening.typed("dump") { _ = try DocumentInspector.dump(database: "db", ofStoreAt: dir.path) }
            guard case .corrupted(let what, _, _)? = e else {
                Issue.record("\(bad): expected .corrupted, got \(String(describing: e))")
                continue
            }
            #expect(what.contains("\"a\""))
            Hardening.everyDumpVerb(dir)
        }
    }
}

// MARK: - Every numeric field a verb renders or adds up, one by one (issue 23)

/// A numeric field of a segment's properties block (FORMAT.md 5.9).
enum PropertiesField: String, CaseIterable, Sendable {
    case records, tombstones, rangeTombstones, keyBytes, valueBytes, dataBlocks, indexBlocks, storedDataBytes, uncompressedDataBytes
    case keyspaceID, keyspaceRecords, keyspaceTombstones, keyspaceKeyBytes, keyspaceValueBytes

    func set(_ p: inout SegmentProperties, _ v: UInt64) {
        switch self {
        case .records: p.records = v
        case .tombstones: p.tombstones = v
        case .rangeTombstones: p.rangeTombstones = v
        case .keyBytes: p.keyBytes = v
        case .valueBytes: p.valueBytes = v
        case .dataBlocks: p.dataBlocks = v
        case .indexBlocks: p.indexBlocks = v
        case .storedDataBytes: p.storedDataBytes = v
        case .uncompressedDataBytes: p.uncompressedDataBytes = v
        case .keyspaceID: for i in p.keyspaces.indices { p.keyspaces[i].id = v }
        case .keyspaceRecords: for i in p.keyspaces.indices { p.keyspaces[i].records = v }
        case .keyspaceTombstones: for i in p.keyspaces.indices { p.keyspaces[i].tombstones = v }
        case .keyspaceKeyBytes: for i in p.keyspaces.indices { p.keyspaces[i].keyBytes = v }
        case .keyspaceValueBytes: for i in p.keyspaces.indices { p.keyspaces[i].valueBytes = v }
        }
    }
}

/// A numeric field of the manifest (FORMAT.md 6): its counters and each segment entry's.
enum ManifestField: String, CaseIterable, Sendable {
    case nextFileNumber, lastSequence, logNumber, segmentNumber, segmentFileSize, segmentRecords

    func set(_ m: inout Manifest, _ v: UInt64) {
        switch self {
        case .nextFileNumber: m.nextFileNumber = v
        case .lastSequence: m.lastSequence = v
        case .logNumber: m.logNumber = v
        case .segmentNumber: m.runs[0][0].number = v
        case .segmentFileSize: for r in m.runs.indices { for s in m.runs[r].indices { m.runs[r][s].fileSize = v } }
        case .segmentRecords: for r in m.runs.indices { for s in m.runs[r].indices { m.runs[r][s].records = v } }
        }
    }
}

/// A numeric field of a push record `strata-dump push` renders (FORMAT.md, push): the counters,
/// the record numbers in keys, a device's badge, a subscription's device, buffer size and
/// status time, a notification's device, subscription and creation time.
enum PushField: String, CaseIterable, Sendable {
    case nextDevice, nextSubscription, nextNotification, deviceNumber, deviceBadge
    case subscriptionNumber, subscriptionDevice, subscriptionBufferSize, subscriptionStatusTime
    case notificationNumber, notificationDevice, notificationSubscription, notificationCreated
}

/// A numeric field of a stored document (FORMAT.md 16.2).
enum DocumentField: String, CaseIterable, Sendable {
    case revision, changeSequence, createDate, lastChange
}

/// A numeric field of a time series' catalog payload (FORMAT.md 14).
enum SeriesField: String, CaseIterable, Sendable {
    case cutoff, lastEditSequence, baseTimestamp, retainedCount, retainedMilliseconds, subscriptionCount
    /// The base timestamp with a retained duration: the cutoff is found from the latest time minus the duration.
    case baseTimestampWithRetainedDuration
}

/// A numeric field of a channel (FORMAT.md, history): its catalog payload's retention and limit,
/// its head's last timetoken and floor, a message's timetoken (in its key).
enum ChannelField: String, CaseIterable, Sendable {
    case retention, limit, headLast, headFloor, messageTimetoken
}

extension DumpNeverTrapsTests {
    @Test("channels: each numeric field of a channel at 0, 1, 2^63 − 1, 2^63, 2^64 − 1", arguments: ChannelField.allCases)
    func channelField(_ field: ChannelField) throws {
        let base = try TemporaryDirectory()
        defer { base.remove() }
        let catalogKey = Catalog.key(kind: .channel, name: "c")
        do {
            let store = try Store.open(at: base.url)
            defer { try? store.close() }
            _ = try store.channel("c", of: String.self).publish("hello")
        }
        let entry = try Catalog.decode(try #require(try Hardening.stored(base, catalogKey)), key: catalogKey)
        let keys = ChannelKeys(name: "c", id: entry.id)
        var message: ([UInt8], [UInt8])?
        do {
            let store = try Store.open(at: base.url)
            defer { try? store.close() }
            let cursor = try store.engine.snapshot().cursor(lower: keys.key(0), upper: keys.end)
            #expect(try cursor.next())
            message = (cursor.withKey { Array($0) }, Array(cursor.value))
        }
        let (messageKey, messageValue) = try #require(message)
        for v in Hardening.extremes {
            let records: [([UInt8], [UInt8])]
            switch field {
            case .retention, .limit:
                let d = ChannelDescriptor(typeName: try ChannelDescriptor(decoding: entry.payload, channel: "c").typeName,
                                          retention: field == .retention ? v : nil, limit: field == .limit ? v : nil)
                records = [(catalogKey, Catalog.encode(CatalogEntry(id: entry.id, payload: d.encoded)))]
            case .headLast, .headFloor:
                records = [(ChannelHead.key(entry.id), ChannelHead(last: field == .headLast ? v : 1, floor: field == .headFloor ? v : 0).encoded)]
            case .messageTimetoken:
                records = [(keys.key(v), messageValue), (messageKey, messageValue)]
            }
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            try Hardening.writeRaw(dir, records)
            Hardening.typed("channels \(field) \(v)") { _ = try ChannelInspector.channels(ofStoreAt: dir.path) }
            Hardening.everyDumpVerb(dir)
        }
    }

    @Test("every verb: a log record whose first sequence is 0, 1, 2^63 − 1, 2^63 or 2^64 − 1 (two operations, valid CRCs)",
          arguments: Hardening.extremes)
    func logSequence(_ first: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var m = Manifest()
        m.nextFileNumber = 2
        m.logNumber = 1
        try dir.write(FileNames.manifest, m.encode())
        var log = LogFormat.header(logNumber: 1)
        for (sequence, keys) in [(UInt64(1), ["a"]), (first, ["b", "c"])] {
            var batch = WriteBatch()
            for k in keys { batch.put(Array(k.utf8), Array("v".utf8)) }
            var p: [UInt8] = []
            LittleEndian.append(sequence, to: &p)
            LittleEndian.append(UInt32(batch.count), to: &p)
            p += batch.operations
            p.withUnsafeBytes { LogFormat.appendRecord(type: .batch, sequence: LogFormat.batchSequence($0), payload: $0, to: &log) }
        }
        try dir.write(FileNames.log(1), log)
        Hardening.everyDumpVerb(dir)
        // The kinds' verbs read the store as open would: they refuse what open refuses.
        let e = Hardening.typed("push") { _ = try PushInspector.push(ofStoreAt: dir.path) }
        if first < 2 || first > LogFormat.maxCounter - 1 {
            guard case .corrupted(let file, _, _)? = e else {
                Issue.record("\(first): expected .corrupted, got \(String(describing: e))")
                return
            }
            #expect(file.hasSuffix(FileNames.log(1)))
        }
    }

    /// A closed store with two segments (two runs), each of a few key-value records.
    private static func twoSegmentStore() throws -> TemporaryDirectory {
        let dir = try segmentStore()
        // A copy of the segment under a new number, as a newer run of its own.
        try Hardening.rewriteManifest(dir) { m in
            var copy = m.runs[0][0]
            copy.number = m.nextFileNumber
            m.nextFileNumber += 1
            m.runs.insert([copy], at: 0)
            try? dir.write(FileNames.segment(copy.number), try dir.read(FileNames.segment(m.runs[1][0].number)))
        }
        return dir
    }

    @Test("summary, segment, verify: each properties field at 0, 1, 2^63 − 1, 2^63, 2^64 − 1 in both segments", arguments: PropertiesField.allCases)
    func propertiesField(_ field: PropertiesField) throws {
        let base = try Self.twoSegmentStore()
        defer { base.remove() }
        #expect(Hardening.segments(base).count == 2)
        for v in Hardening.extremes {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            for segment in Hardening.segments(dir) {
                try Hardening.rewriteProperties(dir, segment: segment) { field.set(&$0, v) }
            }
            let summary = Hardening.typed("summary \(field) \(v)") { _ = try StoreInspector.summary(ofStoreAt: dir.path) }
            #expect(summary == nil, "\(field) = \(v): \(String(describing: summary))")
            if v == .max, field != .keyspaceID, field != .rangeTombstones {
                // Added up over the two segments, the field overflows (or the reader refuses it): a
                // finding. (The summary counts range tombstones in the block, not the properties.)
                let s = try StoreInspector.summary(ofStoreAt: dir.path)
                #expect(!s.problems.isEmpty, "\(field) = \(v)")
            }
            Hardening.everyDumpVerb(dir)
        }
    }

    @Test("summary, verify and the kinds' verbs: each manifest field at 0, 1, 2^63 − 1, 2^63, 2^64 − 1", arguments: ManifestField.allCases)
    func manifestField(_ field: ManifestField) throws {
        let base = try Self.twoSegmentStore()
        defer { base.remove() }
        for v in Hardening.extremes {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            try Hardening.rewriteManifest(dir) { field.set(&$0, v) }
            Hardening.everyDumpVerb(dir)
        }
    }

    /// The subscription record of `Hardening.pushStore()`, rebuilt field by field.
    private static func subscriptionRecord(format: String, device: UInt64 = 1, buffer: UInt64 = 0, statusTime: Int64 = 0) -> [UInt8] {
        var w = PushLayout.Writer()
        w.varint(device)
        w.u8(1)
        w.u8(1)
        w.names(["AAPL"])
        w.names(["value"])
        w.string(format)
        w.u8(0)
        w.varint(buffer)
        w.u8(0)
        w.u8(2)
        w.signed(statusTime)
        return w.bytes
    }

    private static func notificationRecord(device: UInt64 = 1, subscription: UInt64 = 1, created: Int64 = 0) -> [UInt8] {
        var w = PushLayout.Writer()
        w.varint(device)
        w.varint(subscription)
        w.u8(1)
        w.string("com.example")
        w.string("ab12")
        w.string("AAPL")
        w.string("{}")
        w.signed(created)
        return w.bytes
    }

    @Test("push: each numeric field of the push records at 0, 1, 2^63 − 1, 2^63, 2^64 − 1 (times: as signed)", arguments: PushField.allCases)
    func pushField(_ field: PushField) throws {
        let base = try Hardening.pushStore()
        defer { base.remove() }
        let stored = try #require(try Hardening.stored(base, PushLayout.subscriptionKey(1)))
        let format = try #require(try PushRecords.decodeSubscription(stored, number: 1).subscription.notificationFormat)
        // The records as the API wrote them decode back from the rebuilt bytes.
        #expect(Self.subscriptionRecord(format: format) == stored || (try? PushRecords.decodeSubscription(Self.subscriptionRecord(format: format), number: 1)) != nil)
        for v in Hardening.extremes {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            let signed = Int64(bitPattern: v)
            var w = PushLayout.Writer()
            let records: [([UInt8], [UInt8])]
            switch field {
            case .nextDevice, .nextSubscription, .nextNotification:
                for f in [PushField.nextDevice, .nextSubscription, .nextNotification] { w.varint(f == field ? v : 2) }
                records = [(PushLayout.countersKey, w.bytes)]
            case .deviceNumber, .deviceBadge:
                w.u8(1)
                w.string("com.example")
                w.string("ab12")
                w.u8(0)
                w.varint(field == .deviceBadge ? v : 0)
                records = [(PushLayout.deviceKey(field == .deviceNumber ? v : 1), w.bytes)]
            case .subscriptionNumber:
                records = [(PushLayout.subscriptionKey(v), Self.subscriptionRecord(format: format))]
            case .subscriptionDevice:
                records = [(PushLayout.subscriptionKey(1), Self.subscriptionRecord(format: format, device: v))]
            case .subscriptionBufferSize:
                records = [(PushLayout.subscriptionKey(1), Self.subscriptionRecord(format: format, buffer: v))]
            case .subscriptionStatusTime:
                records = [(PushLayout.subscriptionKey(1), Self.subscriptionRecord(format: format, statusTime: signed))]
            case .notificationNumber:
                records = [(PushLayout.notificationKey(v), Self.notificationRecord())]
            case .notificationDevice:
                records = [(PushLayout.notificationKey(1), Self.notificationRecord(device: v))]
            case .notificationSubscription:
                records = [(PushLayout.notificationKey(1), Self.notificationRecord(subscription: v))]
            case .notificationCreated:
                records = [(PushLayout.notificationKey(1), Self.notificationRecord(created: signed))]
            }
            try Hardening.writeRaw(dir, records)
            Hardening.typed("push \(field) \(v)") { _ = try PushInspector.push(ofStoreAt: dir.path) }
            Hardening.everyDumpVerb(dir)
        }
    }

    @Test("push: a subscription's maximum frequency NaN, infinite, negative or huge prints or is a finding", arguments: [
        Double.nan, .infinity, -.infinity, -1, 0, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
    ])
    func pushFrequency(_ f: Double) throws {
        let dir = try Hardening.pushStore()
        defer { dir.remove() }
        var bytes = try #require(try Hardening.stored(dir, PushLayout.subscriptionKey(1)))
        var entry = try PushRecords.decodeSubscription(bytes, number: 1)
        entry.subscription.requestedMaxFrequency = .limited(f)
        bytes = PushRecords.encode(entry)
        try Hardening.writeRaw(dir, [(PushLayout.subscriptionKey(1), bytes)])
        Hardening.typed("push frequency \(f)") { _ = try PushInspector.push(ofStoreAt: dir.path) }
        Hardening.everyDumpVerb(dir)
    }

    @Test("documents: revision and change sequence at 0, 1, 2^63 − 1, 2^63, 2^64 − 1; each date NaN, ±infinite, ±huge", arguments: DocumentField.allCases)
    func documentField(_ field: DocumentField) throws {
        let (base, key) = try Hardening.oneDocumentStore()
        defer { base.remove() }
        let value = try #require(try Hardening.stored(base, key))
        // flags, revision 1, change sequence 1, then the two dates (FORMAT.md 16.2).
        #expect(value[1] == 1 && value[2] == 1)
        let dates: [Double] = [.nan, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 9.3e15, -9.3e15]
        let cases: [[UInt8]]
        switch field {
        case .revision, .changeSequence:
            cases = Hardening.extremes.map { v in
                var out = [value[0]]
                Varint.append(field == .revision ? v : 1, to: &out)
                Varint.append(field == .changeSequence ? v : 1, to: &out)
                return out + value[3...]
            }
        case .createDate, .lastChange:
            let at = field == .createDate ? 3 : 11
            cases = dates.map { d in
                var out = value
                for i in 0..<8 { out[at + i] = UInt8(truncatingIfNeeded: d.bitPattern >> (8 * UInt64(i))) }
                return out
            }
        }
        for (n, bytes) in cases.enumerated() {
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            try Hardening.writeRaw(dir, [(key, bytes)])
            let e = Hardening.typed("documents \(field) case \(n)") { _ = try DocumentInspector.dump(database: "db", ofStoreAt: dir.path) }
            if field == .createDate || field == .lastChange, !dates[n].isFinite {
                guard case .corrupted(let what, _, _)? = e else {
                    Issue.record("\(field) \(dates[n]): expected .corrupted, got \(String(describing: e))")
                    continue
                }
                #expect(what.contains("\"a\""))
            }
            Hardening.everyDumpVerb(dir)
        }
    }

    @Test("series: each numeric field of a series' catalog payload at its limits", arguments: SeriesField.allCases)
    func seriesField(_ field: SeriesField) throws {
        let base = try TemporaryDirectory()
        defer { base.remove() }
        let catalogKey = Catalog.key(kind: .timeSeries, name: "s")
        do {
            let store = try Store.open(at: base.url)
            defer { try? store.close() }
            let s = try store.timeSeries("s", of: Double.self)
            try s.append(contentsOf: (1...20).map(Double.init))
            try store.compact()
            try s.append(21)
            _ = try s.edit(originalSequence: 2, value: 0)
        }
        let stored = try #require(try Hardening.stored(base, catalogKey))
        let entry = try Catalog.decode(stored, key: catalogKey)
        let payload = try SeriesPayload.decode(entry.payload, name: "s")
        for v in Hardening.extremes {
            var p = payload
            let signed = Int64(bitPattern: v)
            switch field {
            case .cutoff: p.cutoff = v
            case .lastEditSequence: p.lastEditSequence = v == 0 ? nil : v - 1
            case .baseTimestamp: p.baseTimestamp = signed
            case .retainedCount: p.retainedCount = Int(clamping: max(1, v))
            case .retainedMilliseconds: p.retainedMilliseconds = min(Int64(clamping: v), Int64(SeriesTime.limit) - 1)
            case .subscriptionCount: p.subscription = .limit(Int(clamping: v))
            case .baseTimestampWithRetainedDuration:
                p.baseTimestamp = signed
                p.retainedMilliseconds = Int64(SeriesTime.limit) - 1
            }
            let dir = try Hardening.copy(base)
            defer { dir.remove() }
            try Hardening.writeRaw(dir, [(catalogKey, Catalog.encode(CatalogEntry(id: entry.id, payload: p.encode())))])
            Hardening.typed("series \(field) \(v)") { _ = try SeriesInspector.series(ofStoreAt: dir.path) }
            Hardening.everyDumpVerb(dir)
            if field == .baseTimestampWithRetainedDuration || field == .baseTimestamp {
                // The store's own retention, at the next append, finds the same threshold; and
                // queries that count back from the latest time or an anchor's time do the same
                // subtraction.
                Hardening.typed("append \(field) \(v)") {
                    let store = try Store.open(at: dir.url)
                    defer { try? store.close() }
                    let series = try store.timeSeries("s", of: Double.self)
                    for query in [RangeQuery.values.fromLast(.seconds(1 << 50)), .values.untilLast(.seconds(1 << 50)),
                                  .values.fromLast(1).previous(.seconds(1 << 50)), .values.fromLast(1).next(.seconds(1 << 50))] {
                        Hardening.typed("query \(field) \(v)") { _ = try series.query(query) }
                    }
                    try series.append(1)
                }
            }
        }
    }

    /// A series summary as a damaged store could give it, one field at a limit.
    enum PrintedSeries: String, CaseIterable, Sendable {
        /// Events but a next sequence of 0: the SEQUENCES column computed `nextSequence - 1`.
        case nextSequenceZero
        /// 2^64 − 1 events: the dump compared the events shown with `Int(count)`.
        case countPastIntMax
        /// Column bits whose sum passes 2^64 − 1: bytes per event added them as `UInt64`.
        case columnBitsOverflow

        var summary: SeriesSummary {
            var storage = SeriesStorage(chunks: 1, chunkedEvents: 1, eventRecords: 0, timestampBits: 8, valueBits: 8, otherBits: 8)
            var count: UInt64 = 1, next: UInt64 = 1
            switch self {
            case .nextSequenceZero: next = 0
            case .countPastIntMax: count = .max; next = .max
            case .columnBitsOverflow: storage.timestampBits = .max; storage.valueBits = .max; storage.otherBits = .max
            }
            return SeriesSummary(path: "s", id: 1, valueType: "Double", count: count, firstSequence: 0, nextSequence: next, edits: 0,
                                 retainedRange: "all", subscriptionRange: "latest", bytes: .max, authors: [], storage: storage)
        }
    }

    @Test("series: the printed list and dump of a summary with one field at a limit", arguments: PrintedSeries.allCases)
    func seriesPrinted(_ field: PrintedSeries) {
        let summary = field.summary
        #expect(SeriesInspector.render([summary]).contains("Time series: 1"))
        #expect(SeriesInspector.render(SeriesDump(summary: summary, events: [])).contains("Time series \"s\""))
    }
}
