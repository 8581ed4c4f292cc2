import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

// strata-dump on an encrypted store: every verb with --key-file (raw or hexadecimal), and the
// typed refusals without it or with another key (exit status 2, the store named).

@Suite struct EncryptedDumpTests {
    typealias F = EncryptionFixture

    @Test("strata-dump reads an encrypted store with --key-file, and refuses it without the key or with another")
    func keyFile() throws {
        let dir = try TemporaryDirectory()
        let scratch = try TemporaryDirectory()
        defer { dir.remove(); scratch.remove() }
        let store = try Store.open(at: dir.url, options: F.options())
        try F.writeMarkers(store)
        try store.close()
        let raw = scratch.file("key.bin"), hex = scratch.file("key.hex"), other = scratch.file("other.hex")
        try scratch.write("key.bin", F.testKey.bytes)
        try scratch.write("key.hex", Array((F.testKey.bytes.map { String(format: "%02x", $0) }.joined() + "\n").utf8))
        try scratch.write("other.hex", Array(F.otherKey.bytes.map { String(format: "%02X", $0) }.joined().utf8))
        let segment = try #require(dir.list().first { $0.hasSuffix(".seg") })
        let log = try #require(dir.list().first { $0.hasSuffix(".log") })
        let verbs: [[String]] = [
            ["summary", dir.path], ["verify", dir.path], ["verify", dir.file(segment)], ["segment", dir.file(segment), "--records"],
            ["log", dir.file(log), "--records"], ["series", dir.path], ["channels", dir.path], ["documents", dir.path],
        ]
        for verb in verbs {
            for keyFile in [raw, hex] {
                let run = try runTool(verb + ["--key-file", keyFile], in: scratch.url)
                #expect(run.status == 0, "\(verb) with \(keyFile): \(run.status) \(run.stderr)")
            }
            let without = try runTool(verb, in: scratch.url)
            #expect(without.status == 2 && without.stderr.contains("encryption key") && without.stderr.contains(dir.path),
                    "\(verb) without a key: \(without.status) \(without.stderr)")
            let wrong = try runTool(verb + ["--key-file", other], in: scratch.url)
            #expect(wrong.status == 2 && wrong.stderr.contains("another key"), "\(verb) with another key: \(wrong.status) \(wrong.stderr)")
        }
        let summary = try runTool(["series", dir.path, "--key-file", hex], in: scratch.url)
        #expect(summary.stdout.contains(F.marker), "the series view shows the decrypted path: \(summary.stdout)")
        let bad = scratch.file("bad.key")
        try scratch.write("bad.key", Array("not a key".utf8))
        let refused = try runTool(["summary", dir.path, "--key-file", bad], in: scratch.url)
        #expect(refused.status == 2 && refused.stderr.contains("neither 32 bytes nor 64 hexadecimal digits"), "\(refused.stderr)")
    }
}
