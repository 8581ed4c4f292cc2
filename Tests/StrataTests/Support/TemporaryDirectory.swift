import Foundation

/// A fresh, empty directory under the system temporary directory, for tests that write files;
/// `remove()` deletes it with everything in it. Its path is canonical (symbolic links resolved),
/// so it equals the paths the store and the system-call hooks see.
struct TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-test-\(UUID().uuidString)")
            .standardizedFileURL.resolvingSymlinksInPath().path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The directory at `path` (which the caller creates and removes).
    init(existing path: String) {
        self.path = path
    }

    var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { path + "/" + name }

    func read(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: file(name)))) }

    func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: file(name))) }

    /// The names in the directory, sorted.
    func list() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
