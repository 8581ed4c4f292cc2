@_spi(Layers) import StrataFormat

extension ArenaMemory {
    /// Chunks of 1 MiB mapped from the system with their pages faulted in up front
    /// (``SystemCalls/mapMemory(count:)``): filling a memtable then takes one system call per
    /// chunk, not a page fault per 4 KiB. A larger node gets a mapping of its own.
    package static let pages = ArenaMemory(
        chunkSize: 1 << 20,
        allocate: { size in
            guard let chunk = SystemCalls.mapMemory(count: size) else {
                fatalError("out of memory: no \(size) bytes for a memtable")
            }
            return chunk
        },
        deallocate: { chunk, size in SystemCalls.unmapMemory(chunk, count: size) })
}
