/// What an engine keeps of its last batches for rebasing, in chunks of ``chunkSize`` entries: a copy of the engine
/// (the server keeps the engine from before each group it may have to resolve again) shares them, and its next
/// commit copies the chunk list and the last chunk only, not thousands of entries.
struct HistoryLog: Sendable {
    static let chunkSize = 256

    /// Kept entries, oldest first, from `dropped` in the first chunk on.
    private var chunks: [[TableEngine.HistoryEntry]] = []
    /// Entries of the first chunk that are no longer kept.
    private var dropped = 0
    /// The number of entries kept.
    private(set) var count = 0
    /// The estimated heap bytes of the entries kept (see ``TableEngine/HistoryEntry/bytes``).
    private(set) var bytes = 0

    /// Appends `entry`, then drops the oldest entries beyond `limit` entries or `byteLimit` bytes.
    mutating func append(_ entry: TableEngine.HistoryEntry, keeping limit: Int, byteLimit: Int) {
        if let last = chunks.indices.last, chunks[last].count < Self.chunkSize {
            chunks[last].append(entry)
        } else {
            var chunk: [TableEngine.HistoryEntry] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunk.append(entry)
            chunks.append(chunk)
        }
        count += 1
        bytes += entry.bytes
        while count > limit || (bytes > byteLimit && count > 0) { dropOldest() }
    }

    /// Drops the oldest entries until at most `byteLimit` bytes are kept.
    mutating func trim(toBytes byteLimit: Int) {
        while bytes > byteLimit && count > 0 { dropOldest() }
    }

    private mutating func dropOldest() {
        bytes -= chunks[0][dropped].bytes
        count -= 1
        dropped += 1
        if dropped == Self.chunkSize || count == 0 {
            chunks.removeFirst()
            dropped = 0
        }
    }

    /// The newest `length` kept entries (at most ``count``), oldest first.
    func suffix(_ length: Int) -> Suffix {
        let skip = dropped + count - length
        return Suffix(chunks: chunks, chunk: skip / Self.chunkSize, offset: skip % Self.chunkSize)
    }

    /// The entries from a position to the newest, in order.
    struct Suffix: Sequence {
        fileprivate let chunks: [[TableEngine.HistoryEntry]]
        fileprivate let chunk: Int
        fileprivate let offset: Int

        func makeIterator() -> Iterator {
            Iterator(chunks: chunks, chunk: chunk, offset: offset)
        }

        struct Iterator: IteratorProtocol {
            fileprivate let chunks: [[TableEngine.HistoryEntry]]
            fileprivate var chunk: Int
            fileprivate var offset: Int

            mutating func next() -> TableEngine.HistoryEntry? {
                while chunk < chunks.count {
                    if offset < chunks[chunk].count {
                        defer { offset += 1 }
                        return chunks[chunk][offset]
                    }
                    chunk += 1
                    offset = 0
                }
                return nil
            }
        }
    }
}
