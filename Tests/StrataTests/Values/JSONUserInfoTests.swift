import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat

/// A value that writes (and reads) what its coder's `userInfo` holds under `Probe.key`.
private struct Probe: Codable, Equatable {
    static let key = CodingUserInfoKey(rawValue: "test.probe")!
    var seen: String

    init(seen: String) { self.seen = seen }

    init(from decoder: any Decoder) throws {
        seen = decoder.userInfo[Self.key] as? String ?? "none"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(encoder.userInfo[Self.key] as? String ?? "none")
    }
}

/// Probes at every kind of place: a keyed member, an array element, a dictionary value, an
/// optional, a nested container of a custom coding.
private struct Holder: Codable, Equatable {
    var direct: Probe
    var list: [Probe]
    var map: [String: [Probe]]
    var maybe: Probe?
}

@Suite("JSON value coders' userInfo")
struct JSONUserInfoTests {
    @Test("userInfo reaches values at every depth, encoding and decoding; without it they see none")
    func userInfoReachesEveryValue() throws {
        let holder = Holder(direct: Probe(seen: ""), list: [Probe(seen: "")], map: ["k": [Probe(seen: "")]], maybe: Probe(seen: ""))
        let json = try JSONValueEncoder(userInfo: [Probe.key: "enc"]).encode(holder)
        #expect(json == ["direct": "enc", "list": ["enc"], "map": ["k": ["enc"]], "maybe": "enc"])
        #expect(try JSONValueEncoder().encode(holder)["direct"] == "none")

        let decoded = try JSONValueDecoder(userInfo: [Probe.key: "dec"]).decode(Holder.self, from: json)
        let dec = Probe(seen: "dec")
        #expect(decoded == Holder(direct: dec, list: [dec], map: ["k": [dec]], maybe: dec))
        #expect(try JSONValueDecoder().decode(Holder.self, from: json).direct == Probe(seen: "none"))
    }
}
