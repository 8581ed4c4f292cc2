import Foundation
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// `SystemFile` is the one owner of its descriptor: it closes it exactly once, so a second close
// (or a close after an error path closed it already) never closes a number that another file of
// the process has been given since.

private func scratch(_ label: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.standardizedFileURL.resolvingSymlinksInPath().path
        + "/strata-systemfile-\(label)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// How many of the process's descriptors refer to `path`.
private func descriptors(of path: String) -> Int {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path }.count
}

@Suite("SystemFile")
struct SystemFileTests {
    @Test("a second close does not close the file that took the descriptor's number")
    func closeIsOnce() throws {
        let dir = try scratch("close")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try FileSystem.real.open(dir + "/a", flags: [.writeOnly, .create])
        a.close()
        // Opened right after, `b` usually gets `a`'s old number (lowest free descriptor).
        let b = try FileSystem.real.open(dir + "/b", flags: [.writeOnly, .create])
        defer { b.close() }
        a.close()
        try b.write([1, 2, 3])
        try b.sync()
        #expect(try b.size() == 3)
        // Calls after close fail with EBADF instead of reaching whatever holds the number now.
        #expect(throws: StrataError.io(path: dir + "/a", errno: EBADF, operation: "write")) { try a.write([1]) }
    }

    @Test("a file no one references any more is closed")
    func releaseCloses() throws {
        let dir = try scratch("release")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/f"
        do {
            let f = try FileSystem.real.open(path, flags: [.writeOnly, .create])
            try f.write([1])
            #expect(descriptors(of: path) == 1)
        }
        #expect(descriptors(of: path) == 0)
    }

    @Test("a failed rename in SegmentWriter.finish, then abandon, closes the writer's descriptor once")
    func segmentWriterRenameFailure() throws {
        let dir = try scratch("segment")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let faults = IOFaults()
        let writer = try SegmentWriter(directory: dir, number: 7, options: SegmentWriterOptions(), fileSystem: .injecting(faults))
        try writer.add(key: Keyspace.keyValue.prefix + Array("k".utf8), kind: .value, value: Array("v".utf8))
        let target = dir + "/" + FileNames.segment(7)
        faults.with({ op, path in op == .rename && path == target ? EIO : nil }) {
            _ = #expect(throws: StrataError.io(path: target, errno: EIO, operation: "rename")) { _ = try writer.finish() }
        }
        // The writer's descriptor is closed: a new file may take its number.
        let other = try FileSystem.real.open(dir + "/other", flags: [.writeOnly, .create])
        defer { other.close() }
        writer.abandon()
        try other.write([1, 2, 3])
        try other.sync()
        #expect(try other.size() == 3)
        #expect(try FileSystem.real.listDirectory(dir).sorted() == ["other"])
    }

    @Test("link gives a file a second name, reports it, and fails typed; realPath resolves links")
    func linkAndRealPath() throws {
        let dir = try scratch("link")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let events = Mutex<[String]>([])
        let faults = IOFaults()
        let files = FileSystem(environment: IOEnvironment(faults: faults, observer: { event in
            if case .linked(let from, let to) = event { events.withLock { $0.append(from + " -> " + to) } }
        }))
        try files.withFile(dir + "/a", flags: [.writeOnly, .create]) { try $0.write([1, 2, 3]) }
        try files.link(dir + "/a", dir + "/b")
        #expect(events.withLock { $0 } == [dir + "/a -> " + dir + "/b"])
        #expect(try FileManager.default.attributesOfItem(atPath: dir + "/b")[.referenceCount] as? Int == 2)
        #expect(try files.withFile(dir + "/b", flags: .readOnly) { try $0.read(at: 0, count: 3) } == [1, 2, 3])
        // An existing name, and an injected fault, are typed errors naming the new path.
        #expect(throws: StrataError.io(path: dir + "/b", errno: Errno.fileExists.code, operation: "link")) {
            try files.link(dir + "/a", dir + "/b")
        }
        faults.set { op, _ in op == .link ? Errno.crossDevice.code : nil }
        #expect(throws: StrataError.io(path: dir + "/c", errno: Errno.crossDevice.code, operation: "link")) {
            try files.link(dir + "/a", dir + "/c")
        }
        faults.set(nil)
        #expect(!FileManager.default.fileExists(atPath: dir + "/c"))
        try FileManager.default.createSymbolicLink(atPath: dir + "/s", withDestinationPath: dir)
        #expect(try files.realPath(dir + "/s/./b") == dir + "/b")
        #expect(try files.isDirectory(dir + "/s"))
        #expect(try !files.isDirectory(dir + "/a"))
    }
}
