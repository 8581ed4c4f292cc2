import Strata
import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The human-readable output of each subcommand: aligned tables, sizes in KiB/MiB.
enum Render {
    // MARK: summary

    static func summary(_ s: StoreSummary) -> String {
        var out = "Store \(s.directory)\n"
        if s.manifestPresent {
            out += "  next file number \(s.nextFileNumber), last sequence \(Format.count(s.lastSequence)), log number \(s.logNumber)\n"
        } else {
            out += "  no MANIFEST (the store crashed before writing its first one)\n"
        }

        out += "\nFiles: \(s.files.count), \(Format.bytes(s.totalBytes))\n"
        var files = TextTable(["NAME", "KIND", "SIZE>"])
        for f in s.files { files.add([f.name, f.kind.rawValue, Format.bytes(f.size)]) }
        out += files.render()

        let segmentsInRuns = s.runs.reduce(0) { $0 + $1.segments.count }
        out += "\nSegments: \(s.segments) of \(segmentsInRuns) readable, \(Format.bytes(s.segmentBytes)) in \(s.runs.count) sorted run\(s.runs.count == 1 ? "" : "s")\n"
        out += "  records           \(Format.count(s.records)) (\(Format.count(s.tombstones)) tombstones), \(Format.count(s.rangeTombstones)) range tombstones\n"
        out += "  keys, values      \(Format.bytes(s.keyBytes)), \(Format.bytes(s.valueBytes))\n"
        out += "  data blocks       \(Format.count(s.dataBlocks)): \(Format.bytes(s.uncompressedDataBytes)) uncompressed, \(Format.bytes(s.storedDataBytes)) stored, compression ratio \(Format.ratio(s.compressionRatio))\n"
        out += "  index blocks      \(Format.count(s.indexBlocks))\n"

        if !s.runs.isEmpty {
            out += "\nSorted runs (newest first)\n"
            var runs = TextTable(["RUN>", "SEGMENT", "SIZE>", "RECORDS>", "TOMBSTONES>", "RANGES>", "SMALLEST KEY", "LARGEST KEY"])
            for run in s.runs {
                for (i, seg) in run.segments.enumerated() {
                    runs.add([i == 0 ? "\(run.index)" : "", seg.name, Format.bytes(seg.size), Format.count(seg.records),
                              Format.optional(seg.tombstones), Format.optional(seg.rangeTombstones),
                              Format.clip(seg.smallestKey.text, 40), Format.clip(seg.largestKey.text, 40)])
                }
            }
            out += runs.render()
        }

        if !s.keyspaces.isEmpty {
            out += "\nKeyspaces\n"
            var ks = TextTable(["ID>", "NAME", "RECORDS>", "TOMBSTONES>", "KEYS>", "VALUES>", "SEGMENTS>", "SMALLEST KEY", "LARGEST KEY"])
            for k in s.keyspaces {
                ks.add([k.id == .max ? "-" : "\(k.id)", k.name, Format.count(k.records), Format.count(k.tombstones),
                        Format.bytes(k.keyBytes), Format.bytes(k.valueBytes), "\(k.segments)",
                        Format.clip(k.smallestKey?.text ?? "-", 40), Format.clip(k.largestKey?.text ?? "-", 40)])
            }
            out += ks.render()
        }

        if !s.logs.isEmpty {
            out += "\nLogs\n"
            var logs = TextTable(["NAME", "SIZE>", "STATE", "BATCHES>", "OPERATIONS>", "SEQUENCES", "NOTE"])
            for l in s.logs {
                var sequences = "-"
                if let a = l.firstSequence, let b = l.lastSequence { sequences = "\(a)…\(b)" }
                var note = ""
                if let t = l.tornTail { note = "torn tail at \(t.offset)" }
                if l.error != nil { note = "unreadable (see problems)" }
                logs.add([l.name, Format.bytes(l.size), l.live ? "live" : "flushed", Format.count(l.batches),
                          Format.count(l.operations), sequences, note])
            }
            out += logs.render()
            out += "  not yet in segments: \(Format.count(s.logBatches)) batches, \(Format.count(s.logOperations)) operations\n"
        }

        if !s.problems.isEmpty {
            out += "\nProblems (run `strata-dump verify` for a full check)\n"
            for p in s.problems { out += "  \(p.file): \(p.message)\n" }
        }
        return out
    }

    // MARK: log

    static func log(_ d: LogDump) -> String {
        var out = "Log \(d.path)\n"
        out += "  log number \(d.logNumber), format version \(d.formatVersion.map(String.init) ?? "- (no header)"), \(Format.bytes(d.size)) (\(Format.count(d.size)) bytes)\n"
        var sequences = ""
        if let a = d.firstSequence, let b = d.lastSequence { sequences = ", sequences \(a)…\(b)" }
        out += "  \(Format.count(d.records.count)) records, \(Format.count(d.operationCount)) operations\(sequences)\n"

        if !d.records.isEmpty {
            out += "\n"
            let withOperations = d.records.contains { $0.operations != nil }
            if !withOperations {
                var table = TextTable(["OFFSET>", "LENGTH>", "TYPE", "FIRST SEQUENCE>", "OPERATIONS>", "ERROR"])
                for r in d.records { table.add(recordRow(r)) }
                out += table.render()
            } else {
                // One table: a row per record, then a row per operation under it.
                var table = TextTable(["OFFSET>", "LENGTH>", "TYPE", "SEQUENCE>", "OPERATIONS>", "OPERATION", "VALUE>", "KEY"])
                for r in d.records {
                    table.add([Format.count(r.offset), Format.count(r.length), r.type, r.firstSequence.map { "\($0)" } ?? "-",
                               Format.optional(r.operationCount), "", "", r.error.map { "ERROR: \($0)" } ?? ""])
                    for op in r.operations ?? [] {
                        switch op.kind {
                        case .put: table.add(["", "", "", "\(op.sequence)", "", "put", Format.bytes(op.valueSize ?? 0), op.key.text])
                        case .delete: table.add(["", "", "", "\(op.sequence)", "", "delete", "", op.key.text])
                        case .deleteRange:
                            table.add(["", "", "", "\(op.sequence)", "", "deleteRange", "", "[\(op.key.text), \(op.endKey?.text ?? "?"))"])
                        }
                    }
                }
                out += table.render()
            }
        }
        if let t = d.tornTail {
            out += "\nTorn tail at offset \(t.offset): \(t.reason) (a crash mid-write leaves this; recovery cuts the log at \(d.validLength))\n"
        }
        return out
    }

    private static func recordRow(_ r: LogDump.Record) -> [String] {
        [Format.count(r.offset), Format.count(r.length), r.type, r.firstSequence.map { "\($0)" } ?? "-",
         Format.optional(r.operationCount), r.error ?? ""]
    }

    // MARK: segment

    static func segment(_ d: SegmentDump) -> String {
        let f = d.footer, p = d.properties
        var out = "Segment \(d.path)\n"
        out += "  \(d.number.map { "number \($0), " } ?? "")\(Format.bytes(d.fileSize)) (\(Format.count(d.fileSize)) bytes), format version \(f.formatVersion)\n"

        out += "\nFooter\n"
        var footer = TextTable(["BLOCK", "OFFSET>", "SIZE>"])
        footer.add(["root index", "\(f.rootIndexOffset)", "\(f.rootIndexSize)"])
        footer.add(["filter", f.filterSize > 0 ? "\(f.filterOffset)" : "-", "\(f.filterSize)"])
        footer.add(["range tombstones", f.rangeTombstonesSize > 0 ? "\(f.rangeTombstonesOffset)" : "-", "\(f.rangeTombstonesSize)"])
        footer.add(["properties", "\(f.propertiesOffset)", "\(f.propertiesSize)"])
        out += footer.render()
        out += "  index height \(f.indexHeight)\n"

        out += "\nProperties\n"
        out += "  records           \(Format.count(p.records)) (\(Format.count(p.tombstones)) tombstones), \(Format.count(p.rangeTombstones)) range tombstones\n"
        out += "  keys, values      \(Format.bytes(p.keyBytes)), \(Format.bytes(p.valueBytes))\n"
        out += "  data blocks       \(Format.count(p.dataBlocks)): \(Format.bytes(p.uncompressedDataBytes)) uncompressed, \(Format.bytes(p.storedDataBytes)) stored, compression ratio \(Format.ratio(p.compressionRatio))\n"
        out += "  index blocks      \(Format.count(p.indexBlocks))\n"
        if let a = p.smallestKey, let b = p.largestKey { out += "  key range         \(a.text) … \(b.text)\n" }
        if !p.keyspaces.isEmpty {
            var ks = TextTable(["KEYSPACE>", "NAME", "RECORDS>", "TOMBSTONES>", "KEYS>", "VALUES>", "SMALLEST KEY", "LARGEST KEY"])
            for k in p.keyspaces {
                ks.add([k.id == .max ? "-" : "\(k.id)", k.name, Format.count(k.records), Format.count(k.tombstones),
                        Format.bytes(k.keyBytes), Format.bytes(k.valueBytes), Format.clip(k.smallestKey.text, 40), Format.clip(k.largestKey.text, 40)])
            }
            out += "\n" + ks.render()
        }

        out += "\nIndex: height \(d.index.height), \(d.index.blocks) block\(d.index.blocks == 1 ? "" : "s"); per level from the root: \(d.index.blocksPerLevel.map(String.init).joined(separator: ", "))\n"

        out += "\nData blocks: \(d.dataBlocks.count)\n"
        if !d.dataBlocks.isEmpty {
            var blocks = TextTable(["#>", "OFFSET>", "STORED>", "UNCOMPRESSED>", "COMPRESSION", "RECORDS>", "FIRST KEY", "LAST KEY"])
            for b in d.dataBlocks {
                if let error = b.error {
                    blocks.add(["\(b.index)", "\(b.offset)", Format.bytes(b.storedSize), Format.bytes(b.uncompressedSize), b.compression, "-", "ERROR: \(error)"])
                } else {
                    blocks.add(["\(b.index)", "\(b.offset)", Format.bytes(b.storedSize), Format.bytes(b.uncompressedSize), b.compression,
                                Format.count(b.records), Format.clip(b.firstKey?.text ?? "-", 40), Format.clip(b.lastKey?.text ?? "-", 40)])
                }
            }
            out += blocks.render()
        }

        if let filter = d.filter {
            let perKey = filter.bitsPerKey.map { String(format: "%.1f", $0) } ?? "-"
            out += "\nFilter: \(Format.bytes(filter.size)) at offset \(filter.offset), \(Format.count(filter.bits)) bits, \(filter.probes) probes, \(perKey) bits per key\n"
        } else {
            out += "\nFilter: none\n"
        }

        if !d.rangeTombstones.isEmpty {
            out += "\nRange tombstones: \(d.rangeTombstones.count)\n"
            for t in d.rangeTombstones { out += "  [\(t.start.text), \(t.end.text))\n" }
        }

        if let records = d.records {
            out += "\nRecords: \(records.count)\n"
            var table = TextTable(["BLOCK>", "KIND", "VALUE>", "KEY"])
            for r in records {
                table.add(["\(r.block)", r.kind.rawValue, r.kind == .value ? Format.bytes(r.valueSize) : "", r.key.text])
            }
            out += table.render()
        }

        if !d.problems.isEmpty {
            out += "\nProblems: \(d.problems.count)\n"
            for pr in d.problems { out += "  offset \(pr.offset): \(pr.reason)\n" }
        }
        return out
    }

    // MARK: verify

    static func verify(_ r: VerifyReport) -> String {
        var out = ""
        for f in r.faults { out += "\(f)\n" }
        for n in r.notes { out += "note: \(n)\n" }
        let what = "\(r.segmentsChecked) segments, \(Format.count(r.blocksChecked)) blocks, \(Format.count(r.recordsChecked)) records, \(r.logsChecked) logs, \(Format.count(r.batchesChecked)) batches"
        if r.isClean {
            out += "verified \(r.path): \(what): OK\n"
        } else {
            out += "verified \(r.path): \(what): \(r.faults.count) fault\(r.faults.count == 1 ? "" : "s")\n"
        }
        return out
    }
}
