import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite struct SecurityPolicyRecordTests {
    static func hex(_ text: String) -> [UInt8] {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { UInt8($0, radix: 16) }
    }

    static var trader: SecurityPolicy {
        var policy = SecurityPolicy()
        policy.roles["trader"] = Role(global: [], paths: ["prices": [.readTopic, .selectTopic, .updateTopic, .editOwnTimeSeriesEvents]])
        policy.principals["alice"] = ["trader"]
        return policy
    }

    @Test("FORMAT.md §17's worked example: the key and the record, byte for byte, as a store writes them")
    func workedExample() throws {
        #expect(SecurityPolicyRecord.key == Self.hex("11 10 10"))
        let expected = Self.hex("""
            01 01 01 06 74 72 61 64 65 72 00 01 06 70 72 69 63 65 73 27 00
            01 05 61 6c 69 63 65 01 06 74 72 61 64 65 72 00
            """)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        let stored = try store.setSecurityPolicy(Self.trader)
        #expect(stored.version == 1)
        #expect(try store.engine.get(SecurityPolicyRecord.key) == expected)
        var decoded = try SecurityPolicyRecord.decode(expected)
        #expect(decoded == stored)
        decoded.version = 0
        #expect(decoded == Self.trader)
        // The example in FORMAT.md is these bytes.
        let format = try String(contentsOfFile: #filePath.components(separatedBy: "/Tests/")[0] + "/FORMAT.md", encoding: .utf8)
        let section = format.components(separatedBy: "## 17. Security policy")[1]
        let lines = section.components(separatedBy: "value:  ")[1].components(separatedBy: "\n")
            .prefix(while: { !$0.trimmingCharacters(in: .whitespaces).isEmpty })
        let documented = lines.flatMap { line -> [UInt8] in
            let code = line.trimmingCharacters(in: .whitespaces).components(separatedBy: "   ")[0]
            return Self.hex(code)
        }
        #expect(documented == expected)
    }

    static func randomPolicy(_ random: inout SplitMix64) -> SecurityPolicy {
        let names = ["", "a", "b", "é", "role with spaces", "x/y", "\u{0}"]
        let paths = ["", "a", "a/b", "a/b/c", "ab", "€/x"]
        var policy = SecurityPolicy()
        for _ in 0..<random.below(5) {
            var role = Role()
            role.global = Set(Permission.allCases.filter { $0.isGlobal && random.below(2) == 0 })
            for _ in 0..<random.below(4) {
                role.paths[paths[random.below(paths.count)]] = Set(Permission.allCases.filter { !$0.isGlobal && random.below(2) == 0 })
            }
            role.includedRoles = Set((0..<random.below(3)).map { _ in names[random.below(names.count)] })
            policy.roles[names[1 + random.below(names.count - 1)]] = role
        }
        for _ in 0..<random.below(4) {
            policy.principals[names[random.below(names.count)]] = Set((0..<random.below(3)).map { _ in names[random.below(names.count)] })
        }
        policy.defaultRoles = Set((0..<random.below(3)).map { _ in names[random.below(names.count)] })
        policy.version = UInt64(random.below(1_000))
        return policy
    }

    @Test("random policies round-trip, with one encoding each")
    func roundTrip() throws {
        var random = SplitMix64(seed: 17)
        for _ in 0..<500 {
            let policy = Self.randomPolicy(&random)
            let bytes = SecurityPolicyRecord.encode(policy)
            let decoded = try SecurityPolicyRecord.decode(bytes)
            #expect(decoded == policy)
            #expect(SecurityPolicyRecord.encode(decoded) == bytes)
        }
    }

    @Test("every truncation and every single-byte change is an error naming the record, or a valid policy; never a crash")
    func damage() throws {
        var random = SplitMix64(seed: 5)
        for _ in 0..<40 {
            let bytes = SecurityPolicyRecord.encode(Self.randomPolicy(&random))
            for cut in 0..<bytes.count {
                #expect(throws: StrataError.self) { _ = try SecurityPolicyRecord.decode(Array(bytes[..<cut])) }
            }
            for i in 0..<bytes.count {
                var damaged = bytes
                damaged[i] = UInt8(random.below(256))
                do {
                    let policy = try SecurityPolicyRecord.decode(damaged)
                    #expect(SecurityPolicyRecord.encode(policy) == damaged, "a decoded record has one encoding")
                } catch let error as StrataError {
                    switch error {
                    case .corrupted(let file, _, _): #expect(file.contains("security policy"))
                    case .unsupportedFormatVersion(let file, _): #expect(i == 0 && file.contains("security policy"))
                    default: Issue.record("unexpected \(error)")
                    }
                }
            }
        }
    }

    @Test("crafted records: extreme counts, unknown bits, disorder, duplicates, bad UTF-8, trailing bytes, another layout")
    func crafted() throws {
        func corrupted(_ bytes: [UInt8], _ reason: String) {
            #expect(throws: StrataError.self, "\(reason)") { _ = try SecurityPolicyRecord.decode(bytes) }
            if case StrataError.corrupted(_, _, let r)? = (try? SecurityPolicyRecord.decode(bytes)).map({ _ in nil }) ?? Self.error(bytes) {
                #expect(r.contains(reason), "\(r) does not say \(reason)")
            } else {
                Issue.record("\(reason): not .corrupted")
            }
        }
        let maxVarint: [UInt8] = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        corrupted([1, 1] + maxVarint, "role count")
        corrupted([1, 1, 0] + maxVarint, "principal count")
        corrupted([1, 1, 1, 1, 0x61, 0x80, 0x80, 0x04, 0, 0, 0, 0], "unknown permission bits")   // bit 16
        corrupted([1, 1, 1, 1, 0x61, 0x01, 0, 0, 0, 0], "global permissions")                  // READ_TOPIC as global
        corrupted([1, 1, 2, 1, 0x62, 0, 0, 0, 1, 0x61, 0, 0, 0, 0, 0], "is not after")          // roles b, a
        corrupted([1, 1, 2, 1, 0x61, 0, 0, 0, 1, 0x61, 0, 0, 0, 0, 0], "is not after")          // roles a, a
        corrupted([1, 1, 1, 1, 0xff, 0, 0, 0, 0, 0], "not UTF-8")
        corrupted([1, 1, 0, 0, 0, 0], "after the policy")
        corrupted([1] + maxVarint.dropLast() + [0x7f], "version")                                  // 70 bits
        corrupted([], "empty")
        #expect(throws: StrataError.unsupportedFormatVersion(file: "security policy (16, 0)", found: 2)) {
            _ = try SecurityPolicyRecord.decode([2, 1, 0, 0, 0])
        }
        // The largest version is kept as it is, and the next set refuses to wrap.
        var policy = SecurityPolicy()
        policy.version = .max
        #expect(try SecurityPolicyRecord.decode(SecurityPolicyRecord.encode(policy)).version == .max)
    }

    static func error(_ bytes: [UInt8]) -> StrataError? {
        do { _ = try SecurityPolicyRecord.decode(bytes); return nil } catch { return error as? StrataError }
    }

    @Test("a store whose stored policy is damaged opens; sessions throw .corrupted until a policy is set")
    func damagedStoredPolicy() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        do {
            let store = try Store.open(at: dir.url)
            var batch = WriteBatch()
            batch.putRaw(SecurityPolicyRecord.key, [1, 1, 0xff])
            try store.engine.commit(CommitBatch(records: batch))
            try store.close()
        }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(throws: StrataError.self) { _ = try store.session(principal: "alice") }
        #expect(throws: StrataError.self) { _ = try store.securityPolicy() }
        try store.put([1], [2])   // the store works
        // The owner repairs it by setting a policy: its version follows the damaged record's.
        #expect(try store.setSecurityPolicy(Self.trader).version == 2)
        #expect(try store.session(principal: "alice").principal == "alice")
        #expect(try store.securityPolicy().version == 2)
    }

    @Test("a stored policy of another layout is neither read nor overwritten; a version at UInt64.max is not wrapped")
    func unknownLayoutAndLastVersion() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        var batch = WriteBatch()
        batch.putRaw(SecurityPolicyRecord.key, [9, 1, 0, 0, 0])
        try store.engine.commit(CommitBatch(records: batch))
        let future = StrataError.unsupportedFormatVersion(file: "security policy (16, 0)", found: 9)
        #expect(throws: future) { _ = try store.session(principal: "alice") }
        #expect(throws: future) { try store.setSecurityPolicy(Self.trader) }

        let dir2 = try TemporaryDirectory()
        defer { dir2.remove() }
        let other = try Store.open(at: dir2.url)
        defer { try? other.close() }
        var last = Self.trader
        last.version = .max
        batch = WriteBatch()
        batch.putRaw(SecurityPolicyRecord.key, SecurityPolicyRecord.encode(last))
        try other.engine.commit(CommitBatch(records: batch))
        #expect(try other.securityPolicy().version == .max)
        #expect(throws: StrataError.self) { try other.setSecurityPolicy(Self.trader) }
        #expect(try other.securityPolicy() == last)
    }
}
