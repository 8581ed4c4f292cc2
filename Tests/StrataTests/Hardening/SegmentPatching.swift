import Foundation
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Rewriting a segment's properties block with valid checksums, for the hardening tests: the
// properties block is the last stored block before the footer (FORMAT.md 5.1), so it can be
// replaced by one of another length; the footer's handle, the footer's CRC and the manifest's
// record of the file size follow.

extension Hardening {
    /// Replaces the properties of segment `name` in the closed store `dir` by `change(properties)`.
    static func rewriteProperties(_ dir: TemporaryDirectory, segment name: String,
                                  _ change: (inout SegmentProperties) -> Void) throws {
        let bytes = try dir.read(name)
        let footerOffset = bytes.count - SegmentFormat.footerSize
        var footer = try bytes.withUnsafeBytes {
            try SegmentFooter.decode(UnsafeRawBufferPointer(rebasing: $0[footerOffset...]), file: name, fileOffset: footerOffset)
        }
        let start = Int(footer.properties.offset)
        precondition(start + Int(footer.properties.length) + SegmentFormat.blockTrailerSize == footerOffset,
                     "the properties block is not the last block")
        guard var properties = bytes[start..<(start + Int(footer.properties.length))].withUnsafeBytes({
            SegmentProperties.decode($0)
        }) else { throw StrataError.invalidArgument(argument: "test", reason: "test: the properties do not decode") }
        change(&properties)
        let payload = properties.encode()
        var out = Array(bytes[..<start]) + payload
        var trailer: [UInt8] = [0]
        LittleEndian.append(UInt32(payload.count), to: &trailer)
        out += trailer
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(trailer, extending: CRC32C.checksum(payload))), to: &out)
        footer.properties = BlockHandle(offset: UInt64(start), length: UInt64(payload.count))
        out += footer.encode()
        try dir.write(name, out)
        try rewriteManifest(dir) { m in
            for r in m.runs.indices {
                for s in m.runs[r].indices where FileNames.segment(m.runs[r][s].number) == name {
                    m.runs[r][s].fileSize = UInt64(out.count)
                }
            }
        }
    }

    /// Replaces the closed store's manifest by `change(manifest)`, encoded with a valid CRC.
    static func rewriteManifest(_ dir: TemporaryDirectory, _ change: (inout Manifest) -> Void) throws {
        var m = try Manifest.decode(try dir.read(FileNames.manifest), file: FileNames.manifest)
        change(&m)
        try dir.write(FileNames.manifest, m.encode())
    }

    /// The names of the store's segment files, sorted.
    static func segments(_ dir: TemporaryDirectory) -> [String] {
        dir.list().filter { if case .segment = FileNames.parse($0) { return true } else { return false } }
    }
}

