@_spi(Layers) import StrataFormat

extension ArenaMemory {
    /// The size and alignment of ``pages``' chunks: one huge page where the system has them.
    private static let pageChunkSize = 2 << 20

    /// Chunks of 2 MiB mapped from the system (``SystemCalls/mapMemory(count:alignment:)``),
    /// aligned so that each can be one huge page: filling a memtable then faults once per chunk,
    /// not once per 4 KiB page. A larger node gets a mapping of its own, rounded up to 2 MiB.
    package static let pages = ArenaMemory(
        chunkSize: pageChunkSize,
        allocate: { size in
            guard let chunk = SystemCalls.mapMemory(count: rounded(size), alignment: pageChunkSize) else {
                fatalError("out of memory: no \(rounded(size)) bytes for a memtable")
            }
            return chunk
        },
        deallocate: { chunk, size in SystemCalls.unmapMemory(chunk, count: rounded(size)) })

    /// `size` rounded up to a whole number of chunks.
    private static func rounded(_ size: Int) -> Int { (size + pageChunkSize - 1) & ~(pageChunkSize - 1) }
}
