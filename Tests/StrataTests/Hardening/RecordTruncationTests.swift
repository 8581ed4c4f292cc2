import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Every record decoder reads through `ByteReader`: a record cut short anywhere in its fields is
// refused with `.corrupted` naming the record (or, for an event header, nil), never a trap, and
// a record grown by a huge length is refused the same way.

/// The error `body` throws, or nil.
private func thrown(_ body: () throws -> Void) -> StrataError? {
    do { try body(); return nil } catch let error as StrataError { return error } catch { return nil }
}

/// Checks that `decode` refuses every proper prefix of `bytes` shorter than `fieldsEnd` with
/// `.corrupted` whose file contains `file`, and accepts `bytes` itself.
private func expectTruncationsRefused(_ bytes: [UInt8], fieldsEnd: Int? = nil, file: String,
                                      sourceLocation: SourceLocation = #_sourceLocation,
                                      _ decode: ([UInt8]) throws -> Void) {
    #expect(thrown { try decode(bytes) } == nil, "the whole record decodes", sourceLocation: sourceLocation)
    for cut in 0..<(fieldsEnd ?? bytes.count) {
        let error = thrown { try decode(Array(bytes[..<cut])) }
        guard case .corrupted(let f, let offset, _)? = error else {
            Issue.record("cut at \(cut) of \(bytes.count): \(String(describing: error))", sourceLocation: sourceLocation)
            continue
        }
        #expect(f.contains(file), "\(f)", sourceLocation: sourceLocation)
        #expect(offset >= 0 && offset <= cut, "cut at \(cut): offset \(offset)", sourceLocation: sourceLocation)
    }
}

@Suite struct RecordTruncationTests {
    @Test("a document record: every cut inside its header")
    func documentRecord() throws {
        let record = DocumentRecord(isDeleted: false, revision: 3, changeSequence: 9, createDate: Date(timeIntervalSince1970: 1),
                                    lastChange: Date(timeIntervalSince1970: 2), type: "invoice", channels: ["a", "bé"],
                                    attachments: [.init(name: "f", contentType: "text/plain", length: 4, crc: 7)])
        var bytes: [UInt8] = []
        record.appendHeader(to: &bytes)
        let headerEnd = bytes.count
        JSON.object(["x": 1]).appendBinary(to: &bytes)
        expectTruncationsRefused(bytes, fieldsEnd: headerEnd, file: #"document "d""#) { b in
            let decoded = try b.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: "d") }
            #expect(decoded.bodyOffset == headerEnd)
        }
    }

    @Test("a change-feed entry and an index payload")
    func documentLayout() throws {
        let change = DocumentLayout.changeValue(id: "doc", isDeletion: true, revision: 300)
        expectTruncationsRefused(change, fieldsEnd: 3, file: #"change "5""#) { b in
            _ = try b.withUnsafeBytes { try DocumentLayout.decodeChange($0, sequence: 5) }
        }
        let payload = DocumentLayout.indexPayload(version: "v1", state: DocumentLayout.indexBehind, reduction: .count,
                                                  collation: .unicode, collatorVersion: [1, 2, 3, 4], reflected: 1_000)
        // A cut before the layout byte's successor leaves an empty payload, refused too.
        expectTruncationsRefused(payload, file: "catalog entry") { b in _ = try DocumentLayout.decodeIndexPayload(b, name: "db\u{0}i") }
    }

    @Test("a history message record: every cut inside meta and publisher")
    func messageRecord() throws {
        var bytes: [UInt8] = []
        MessageRecord.encode(message: { $0 += [0xAA, 0xBB] }, meta: ["lang": "en"], publisher: "alice", into: &bytes)
        let fieldsEnd = bytes.count - 2
        expectTruncationsRefused(bytes, fieldsEnd: fieldsEnd, file: "message 7") { b in
            let parts = try b.withUnsafeBytes { try MessageRecord.decode($0, what: "message 7") }
            #expect(parts.publisher == "alice")
        }
        // A meta length near UInt64.max.
        var huge: [UInt8] = [MessageRecord.hasMeta]
        Varint.append(UInt64.max, to: &huge)
        huge += [1, 2, 3]
        let error = thrown { _ = try huge.withUnsafeBytes { try MessageRecord.decode($0, what: "message 8") } }
        guard case .corrupted("message 8", 1, let reason)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(reason.contains("meta length"), "\(reason)")
    }

    @Test("push records: a device, a notification, the counters")
    func pushRecords() throws {
        let device = PushModel.DeviceEntry(device: PushDevice(platform: .apple, applicationID: "app", deviceToken: "tok"),
                                           suspended: true, badge: 300)
        expectTruncationsRefused(PushRecords.encode(device), file: "push device D4") { b in
            _ = try PushRecords.decodeDevice(b, number: 4)
        }
        let notification = PushNotification(id: 9, deviceID: "D1", platform: .google, applicationID: "a", deviceToken: "t",
                                            subscriptionID: "S2", item: "prices", payload: "{}", created: Date(timeIntervalSince1970: 5))
        expectTruncationsRefused(PushRecords.encode(notification, device: 1, subscription: 2), file: "push notification 9") { b in
            let decoded = try PushRecords.decodeNotification(b, id: 9)
            #expect(decoded == notification)
        }
        var counters: [UInt8] = [PushLayout.layout]
        for n: UInt64 in [1, 200, 70_000] { Varint.append(n, to: &counters) }
        expectTruncationsRefused(counters, file: "push counters") { b in _ = try PushRecords.decodeCounters(b) }
    }

    @Test("a security policy record")
    func securityPolicy() throws {
        var policy = SecurityPolicy()
        policy.roles["trader"] = Role(global: [], paths: ["prices": [.readTopic, .selectTopic]])
        policy.principals["alice"] = ["trader"]
        expectTruncationsRefused(SecurityPolicyRecord.encode(policy), file: "security policy") { b in
            _ = try SecurityPolicyRecord.decode(b)
        }
    }

    @Test("catalog payloads of a series and a channel")
    func catalogPayloads() throws {
        var series = SeriesPayload(typeName: "Double", options: TimeSeriesOptions(retainedRange: .limit(10, last: .seconds(5))))
        series.authors = ["", "bob"]
        series.baseTimestamp = 1_700_000_000_000
        expectTruncationsRefused(series.encode(), file: "catalog entry time series") { b in
            let decoded = try SeriesPayload.decode(b, name: "p")
            #expect(decoded == series)
        }
        let channel = ChannelDescriptor(typeName: "JSON", retention: 36_000_000_000, limit: 500)
        expectTruncationsRefused(channel.encoded, file: "catalog entry channel") { b in
            let decoded = try ChannelDescriptor(decoding: b, channel: "c")
            #expect(decoded == channel)
        }
    }

    @Test("an event header: every cut inside it decodes to nil")
    func eventRecord() throws {
        var bytes: [UInt8] = []
        EventRecord.appendHeader(timestampDelta: 1_000, author: 3, original: (sequence: 2, timestampDelta: 500, author: 1), to: &bytes)
        let headerEnd = bytes.count
        bytes += [9, 9]
        let whole = bytes.withUnsafeBytes { EventRecord.decode($0) }
        #expect(whole?.valueOffset == headerEnd)
        #expect(whole?.original?.sequence == 2)
        for cut in 0..<headerEnd {
            #expect(Array(bytes[..<cut]).withUnsafeBytes { EventRecord.decode($0) } == nil, "cut at \(cut)")
        }
    }
}
