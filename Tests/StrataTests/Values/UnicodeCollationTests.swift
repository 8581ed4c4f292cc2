import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Unicode collation keys")
struct UnicodeCollationTests {
    @Test("ICU is available, with a collator version")
    func available() {
        #expect(UnicodeCollation.isAvailable)
        #expect(UnicodeCollation.version?.count == 4)
    }

    @Test("non-string values and the order of kinds are those of the raw collation key")
    func sameStructure() throws {
        var random = RandomJSON(seed: 21)
        for _ in 0..<2000 {
            let v = random.value()
            guard !Self.holdsString(v) else { continue }
            #expect(try v.unicodeCollationKey() == v.collationKey, "\(v)")
        }
        let kinds: [JSON] = [nil, false, true, -1, 0, 1.5, "", "a", [], ["a"], [:], ["a": 1]]
        let keys = try kinds.map { try $0.unicodeCollationKey() }
        #expect(keys == keys.sorted { $0.lexicographicallyPrecedes($1) })
    }

    static func holdsString(_ v: JSON) -> Bool {
        switch v {
        case .string, .date: return true
        case .array(let a): return a.contains(where: holdsString)
        case .object(let o): return !o.isEmpty
        default: return false
        }
    }

    @Test("keys are self-delimiting and skip lands on their end, raw and Unicode alike")
    func skip() throws {
        var random = RandomJSON(seed: 22)
        for _ in 0..<2000 {
            let v = random.value()
            for key in [v.collationKey, try v.unicodeCollationKey()] {
                let suffixed = key + [0x02, 0x64, 0x00, 0x10]
                var offset = 0
                try suffixed.withUnsafeBytes { try JSON.skipCollationKey($0, at: &offset) }
                #expect(offset == key.count, "\(v)")
                // Every proper prefix is refused (or ends early at a shorter value), never a trap.
                for cut in [0, key.count / 2, key.count - 1] where cut < key.count {
                    var at = 0
                    let prefix = Array(key[0..<cut])
                    let result = Result { try prefix.withUnsafeBytes { try JSON.skipCollationKey($0, at: &at) } }
                    if case .success = result { #expect(at <= cut) }
                }
            }
        }
        var offset = 0
        #expect(throws: StrataError.self) { try [UInt8]([0x77]).withUnsafeBytes { try JSON.skipCollationKey($0, at: &offset) } }
        offset = 0
        let tooLong: [UInt8] = [0x33, 0x04, 0x33] + [UInt8](repeating: 0x03, count: 11) + [0x02]
        #expect(throws: StrataError.self) { try tooLong.withUnsafeBytes { try JSON.skipCollationKey($0, at: &offset) } }
    }

    @Test("UCA order of strings: case and accents second, equivalent strings equal")
    func stringOrder() throws {
        func key(_ s: String) throws -> [UInt8] { try JSON.string(s).unicodeCollationKey() }
        let ascending = ["", " ", "_", "-", ",", "!", "1", "9", "a", "A", "á", "Á", "aa", "ab", "b", "B", "ẞ", "z", "Z", "ω", "Ω"]
        let keys = try ascending.map(key)
        for i in keys.indices.dropFirst() {
            #expect(keys[i - 1].lexicographicallyPrecedes(keys[i]), "\(ascending[i - 1]) < \(ascending[i])")
        }
        #expect(try key("\u{e9}") == key("e\u{301}"))
        // A string with NUL sorts and skips like any other.
        var k = try key("a\u{0}b")
        k.append(0x10)
        var offset = 0
        try k.withUnsafeBytes { try JSON.skipCollationKey($0, at: &offset) }
        #expect(offset == k.count - 1)
        // A long string gets a key longer than the first guess of its buffer.
        let long = String(repeating: "ǅ\u{301}\u{302}", count: 300)
        #expect(try key(long).count > 32)
    }
}
