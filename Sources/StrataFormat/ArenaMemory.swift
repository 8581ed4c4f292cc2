/// Where an ``ArenaSkipList`` takes its chunks from and gives them back to. ``heap`` by default;
/// the engine's memtables take whole pages from the system (StrataFiles, through the platform
/// seam), where the first touch of a chunk need not fault page by page.
@_spi(Layers) public struct ArenaMemory: Sendable {
    /// The size of a chunk; a node larger than that gets a chunk of its own size.
    package let chunkSize: Int
    /// A new chunk of at least the given size, 8-byte aligned.
    package let allocate: @Sendable (Int) -> UnsafeMutableRawPointer
    /// Gives back a chunk `allocate` returned, with the size it was asked for.
    package let deallocate: @Sendable (UnsafeMutableRawPointer, Int) -> Void

    package init(chunkSize: Int, allocate: @escaping @Sendable (Int) -> UnsafeMutableRawPointer,
                 deallocate: @escaping @Sendable (UnsafeMutableRawPointer, Int) -> Void) {
        self.chunkSize = chunkSize
        self.allocate = allocate
        self.deallocate = deallocate
    }

    /// Chunks of 1 MiB from the heap.
    package static let heap = ArenaMemory(
        chunkSize: 1 << 20,
        allocate: { UnsafeMutableRawPointer.allocate(byteCount: $0, alignment: 8) },
        deallocate: { chunk, _ in chunk.deallocate() })
}
