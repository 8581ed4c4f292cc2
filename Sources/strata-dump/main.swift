// strata-dump: inspect a Strata store's files without opening the store.
//
// A thin shell over the library's inspection API (`StoreInspector`, `LogInspector`,
// `SegmentInspector`, `StoreVerifier`, and each collection kind's `CollectionInspector`, which
// `CollectionCommand` makes a subcommand): this file parses arguments and prints tables or JSON.
// Exit status: 0 success (for `verify`: no faults), 1 damage found (faults, a corrupt file),
// 2 usage errors and paths that are not a readable Strata store or file.

import ArgumentParser
import Foundation
import Strata
import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

struct StrataDump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-dump",
        abstract: "Inspect the files of a Strata store: summary, logs, segments, verify, "
            + StoreCollections.inspectors.map { $0.commandName }.joined(separator: ", ") + ".",
        discussion: """
            strata-dump reads files read-only and takes no lock, so it may run beside the process \
            that has the store open. Every subcommand prints JSON instead of tables with --json.

            Exit status: 0 on success (verify: no faults), 1 when damage is found, 2 for usage \
            errors and paths that are not a readable Strata store or file.
            """,
        // Then one subcommand per collection kind, as each kind's inspector describes it.
        subcommands: [Summary.self, Log.self, Segment.self, Verify.self] + StoreCollections.inspectors.map { $0.command })
}

struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON (pretty-printed, sorted keys, exact byte counts) instead of tables.")
    var json = false

    @Option(name: .customLong("key-file"),
            help: "The encryption key of an encrypted store: a file of 32 bytes, or of 64 hexadecimal digits.")
    var keyFile: String?

    /// Runs `body` with the key of `--key-file` as the inspection key.
    func withKey<R>(_ body: () throws -> R) throws -> R {
        guard let keyFile else { return try body() }
        return try InspectionKey.$current.withValue(try Self.readKey(keyFile), operation: body)
    }

    static func readKey(_ path: String) throws -> EncryptionKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read the key file \(path)")
        }
        let bytes = [UInt8](data)
        if bytes.count == EncryptionKey.byteCount { return try EncryptionKey(bytes: bytes) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count == 2 * EncryptionKey.byteCount, text.allSatisfy(\.isHexDigit) else {
            throw ValidationError("the key file \(path) holds neither 32 bytes nor 64 hexadecimal digits")
        }
        var hex = text[...]
        var key: [UInt8] = []
        while !hex.isEmpty {
            key.append(UInt8(hex.prefix(2), radix: 16)!)
            hex = hex.dropFirst(2)
        }
        return try EncryptionKey(bytes: key)
    }
}

extension StrataDump {
    struct Summary: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Summarize a store: files, sizes, runs, keyspaces, logs, compression.")

        @Argument(help: "The store directory.")
        var store: String

        @OptionGroup var output: OutputOptions

        func run() throws {
            let summary = try output.withKey { try StoreInspector.summary(ofStoreAt: store) }
            if output.json { try printJSON(summary) } else { print(Render.summary(summary), terminator: "") }
        }
    }

    struct Log: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Dump a write-ahead log: its header and each record (batch).")

        @Argument(help: "The log file (NNNNNN.log).")
        var file: String

        @Flag(help: "Also list each operation of each batch, with its decoded key.")
        var records = false

        @OptionGroup var output: OutputOptions

        func run() throws {
            let dump = try output.withKey { try LogInspector.dump(logAt: file, includeOperations: records) }
            if output.json { try printJSON(dump) } else { print(Render.log(dump), terminator: "") }
        }
    }

    struct Segment: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Dump a segment file: footer, properties, index, data blocks, filter, range tombstones.")

        @Argument(help: "The segment file (NNNNNN.seg).")
        var file: String

        @Flag(help: "Also list every record, with its decoded key.")
        var records = false

        @OptionGroup var output: OutputOptions

        func run() throws {
            let dump = try output.withKey { try SegmentInspector.dump(segmentAt: file, includeRecords: records) }
            if output.json { try printJSON(dump) } else { print(Render.segment(dump), terminator: "") }
            if !dump.problems.isEmpty { throw ExitCode(1) }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every checksum, key order, index and count of a store (or of one file), and its collections' records.",
            discussion: """
                Prints one line per fault (file, offset, reason) and exits 1 if there is any, 0 if \
                the store is clean. A torn log tail is a note, not a fault.
                """)

        @Argument(help: "The store directory, or a single segment or log file.")
        var path: String

        @OptionGroup var output: OutputOptions

        func run() throws {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            let report = exists && !isDirectory.boolValue
                ? try output.withKey { try StoreVerifier.verify(fileAt: path) }
                : try output.withKey { try StoreVerifier.verify(storeAt: path) }
            if output.json { try printJSON(report) } else { print(Render.verify(report), terminator: "") }
            if !report.isClean { throw ExitCode(1) }
        }
    }
}

func printJSON<T: Encodable>(_ value: T) throws {
    print(try InspectionJSON.text(value), terminator: "")
}

func printError(_ message: String) {
    // One line, whatever the message holds.
    let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
    FileHandle.standardError.write(Data("strata-dump: \(line)\n".utf8))
}

// MARK: - Main

do {
    var command = try StrataDump.parseAsRoot()
    try command.run()
} catch let error as InspectionError {
    printError(error.description)
    exit(2)
} catch let error as StrataError {
    printError(error.description)
    if case .corrupted = error { exit(1) }
    exit(2)
} catch {
    // Usage errors exit 2 (ArgumentParser's own default is 64); help, `ExitCode` and the rest as
    // ArgumentParser handles them.
    if StrataDump.exitCode(for: error) == .validationFailure {
        FileHandle.standardError.write(Data((StrataDump.fullMessage(for: error) + "\n").utf8))
        exit(2)
    }
    StrataDump.exit(withError: error)
}
