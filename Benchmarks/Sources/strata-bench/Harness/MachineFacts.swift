import Foundation
import GRDBSQLite

/// Facts about the machine and the software measured, written into `--json`.
struct MachineFacts: Codable, Sendable {
    var cores: Int
    var memoryBytes: UInt64
    var cpu: String
    var operatingSystem: String
    var kernel: String
    var swiftVersion: String
    var strataCommit: String
    var sqliteVersion: String
    var grdbVersion: String
    var rocksdbVersion: String
    var hdrHistogramVersion: String
    var loadAverageAtStart: String
    var loadAverageAtEnd: String
    /// The file system the stores were written to (e.g. ext4; a tmpfs would flatter every engine).
    var storeFileSystem: String
    var storeDirectory: String

    /// The facts now; `startLoad` given, the load average now is the one at the end.
    static func collect(storeDirectory: URL, startLoad: String? = nil) -> MachineFacts {
        let pins = packagePins()
        return MachineFacts(
            cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryBytes: ProcessInfo.processInfo.physicalMemory,
            cpu: cpuModel(),
            operatingSystem: osRelease(),
            kernel: uname(),
            swiftVersion: swiftVersion(),
            strataCommit: strataCommit(),
            sqliteVersion: String(cString: sqlite3_libversion()),
            grdbVersion: pins["grdb.swift"] ?? "unknown",
            rocksdbVersion: rocksdbVersion(),
            hdrHistogramVersion: pins["hdrhistogram-swift"] ?? "unknown",
            loadAverageAtStart: startLoad ?? loadAverage(),
            loadAverageAtEnd: startLoad == nil ? "" : loadAverage(),
            storeFileSystem: fileSystem(of: storeDirectory),
            storeDirectory: storeDirectory.path)
    }

    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    private static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        }
        return "unknown"
    }

    private static func osRelease() -> String {
        guard let text = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8) else {
            return ProcessInfo.processInfo.operatingSystemVersionString
        }
        for line in text.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
            return line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return ProcessInfo.processInfo.operatingSystemVersionString
    }

    private static func uname() -> String {
        var u = utsname()
        guard Glibc.uname(&u) == 0 else { return "unknown" }
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        }
        return "\(field(u.sysname)) \(field(u.release)) \(field(u.machine))"
    }

    /// The compiler this binary was built with (major.minor), and `swift --version` when it runs.
    private static func swiftVersion() -> String {
        #if compiler(>=6.4)
        let built = "6.4+"
        #elseif compiler(>=6.3)
        let built = "6.3"
        #elseif compiler(>=6.2)
        let built = "6.2"
        #elseif compiler(>=6.1)
        let built = "6.1"
        #else
        let built = "6.0"
        #endif
        if let line = run("/usr/bin/env", ["swift", "--version"])?.split(separator: "\n").first {
            return "\(line) (built with \(built))"
        }
        return "built with Swift \(built)"
    }

    /// The commit of the Strata tree the bench was built from (with `+dirty` for local changes).
    private static func strataCommit() -> String {
        let root = packageDirectory.deletingLastPathComponent().path
        guard let head = run("/usr/bin/env", ["git", "-C", root, "rev-parse", "--short=12", "HEAD"])?
            .trimmingCharacters(in: .whitespacesAndNewlines), !head.isEmpty else { return "unknown" }
        let dirty = run("/usr/bin/env", ["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "Sources"])?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return dirty.isEmpty ? head : head + "+dirty"
    }

    /// RocksDB's C API has no version call: the RocksDB LOG of a run names it (``RocksDB/version``),
    /// else the Debian package's version.
    private static func rocksdbVersion() -> String {
        if let v = RocksDB.loggedVersion.withLock({ $0 }) { return v }
        if let v = run("/usr/bin/env", ["dpkg-query", "-W", "-f=${Version}", "librocksdb-dev"]), !v.isEmpty {
            return v + " (librocksdb-dev)"
        }
        return "unknown"
    }

    /// The type of the file system holding `url`, from /proc/mounts (the longest mount point
    /// that is a prefix of its path).
    private static func fileSystem(of url: URL) -> String {
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return "unknown" }
        let path = url.resolvingSymlinksInPath().path
        var best = (length: -1, type: "unknown")
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let point = String(fields[1])
            let isPrefix = point == "/" || path == point || path.hasPrefix(point + "/")
            if isPrefix && point.count > best.length { best = (point.count, String(fields[2])) }
        }
        return best.type
    }

    /// The Benchmarks package directory (this file is in Sources/strata-bench/Harness/).
    static let packageDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Versions pinned in Benchmarks/Package.resolved, by package identity.
    private static func packagePins() -> [String: String] {
        struct Resolved: Decodable {
            struct Pin: Decodable {
                struct State: Decodable { var version: String? }
                var identity: String
                var state: State
            }
            var pins: [Pin]
        }
        let url = packageDirectory.appendingPathComponent("Package.resolved")
        guard let data = try? Data(contentsOf: url),
              let resolved = try? JSONDecoder().decode(Resolved.self, from: data) else { return [:] }
        var out: [String: String] = [:]
        for pin in resolved.pins { out[pin.identity.lowercased()] = pin.state.version ?? "unknown" }
        return out
    }

    /// Runs a program and returns its standard output, or nil if it could not run or failed.
    static func run(_ path: String, _ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
