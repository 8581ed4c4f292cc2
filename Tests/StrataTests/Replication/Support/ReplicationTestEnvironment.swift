import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the replication tests find their programs, and whether they run at all.
///
/// The tests that start real PostgreSQL and gateway processes run only when `STRATA_GATEWAY_BIN`
/// names the `strata-gateway` binary (Scripts/test builds Gateway/ and sets it, so CI runs them).
/// PostgreSQL is started by `Scripts/postgres` (or the script `STRATA_POSTGRES_SCRIPT` names).
enum ReplicationTestEnvironment {
    /// The `strata-gateway` binary, from `STRATA_GATEWAY_BIN`; nil when unset or empty.
    static var gatewayBinary: String? {
        guard let path = ProcessInfo.processInfo.environment["STRATA_GATEWAY_BIN"], !path.isEmpty else { return nil }
        return path
    }

    /// Whether the tests against real gateway processes run.
    static var isEnabled: Bool { gatewayBinary != nil }

    /// The package root: this file is Tests/StrataTests/Replication/Support/ReplicationTestEnvironment.swift.
    static var repositoryRoot: URL {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<5 { url.deleteLastPathComponent() }
        return url
    }

    /// `Scripts/postgres`, or the script `STRATA_POSTGRES_SCRIPT` names.
    static var postgresScript: String {
        if let path = ProcessInfo.processInfo.environment["STRATA_POSTGRES_SCRIPT"], !path.isEmpty { return path }
        return repositoryRoot.appendingPathComponent("Scripts/postgres").path
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
    /// Another process may take it before it is used; callers that bind it retry on failure.
    static func freePort() throws -> Int {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw FixtureError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw FixtureError("bind 127.0.0.1:0: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw FixtureError("getsockname: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A failure of the replication test fixture (a process that did not start, a command that failed).
struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The result of a finished command: its exit code and what it wrote (standard output and error).
struct CommandResult {
    var status: Int32
    var output: String
}

/// Runs `executable` with `arguments` to its end (at most `timeout` seconds, then it is killed and
/// this throws), its standard output and error going to a file so that a daemon it leaves behind
/// (pg_ctl's postmaster) cannot hold a pipe open. The output is the two streams together.
func runCommand(_ executable: String, _ arguments: [String], timeout: Double = 120) throws -> CommandResult {
    let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("strata-cmd-\(UUID().uuidString).log").path
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    let process = try SpawnedProcess(executable, arguments, outputPath: outputPath)
    guard process.waitForExit(timeout: timeout) else {
        process.killAndWait()
        throw FixtureError("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout) s")
    }
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    return CommandResult(status: process.exitCode ?? -1, output: output)
}

/// Runs a command that must succeed; throws with its output otherwise.
@discardableResult
func runChecked(_ executable: String, _ arguments: [String], timeout: Double = 120) throws -> String {
    let result = try runCommand(executable, arguments, timeout: timeout)
    guard result.status == 0 else {
        throw FixtureError("\(executable) \(arguments.joined(separator: " ")) exited \(result.status): \(result.output)")
    }
    return result.output
}
