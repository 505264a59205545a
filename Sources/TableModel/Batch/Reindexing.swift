/// How a batch renumbers one level (the sections of a table, or the rows of one section): the old indices it
/// removes (deletions and move sources) and the final indices it fills (insertions and move destinations).
/// Everything that is neither removed nor placed survives in order and fills the remaining final slots.
struct Reindexing: Hashable, Sendable {
    /// Old indices that leave this level, sorted ascending.
    var removed: [Int]
    /// Final indices that are filled by insertions or move destinations, sorted ascending.
    var placed: [Int]

    /// The position of surviving old index `old` among the survivors.
    func survivorIndex(ofOld old: Int) -> Int { old - removed.countLess(than: old) }

    /// The final index of the `survivor`-th survivor: survivors fill the final slots that are not placed, in order.
    func finalIndex(ofSurvivor survivor: Int) -> Int {
        var index = survivor
        for slot in placed {
            if slot <= index { index += 1 } else { break }
        }
        return index
    }

    /// The final index of surviving old index `old`.
    func finalIndex(ofOld old: Int) -> Int { finalIndex(ofSurvivor: survivorIndex(ofOld: old)) }

    /// The old index of the `survivor`-th survivor.
    func oldIndex(ofSurvivor survivor: Int) -> Int {
        var index = survivor
        for slot in removed {
            if slot <= index { index += 1 } else { break }
        }
        return index
    }

    /// How many survivors precede final index `final`.
    func survivorsBefore(final: Int) -> Int { final - placed.countLess(than: final) }

    /// Whether old index `old` is removed.
    func isRemoved(_ old: Int) -> Bool { removed.containsSorted(old) }

    /// Whether final index `final` is filled by an insertion or move destination.
    func isPlaced(_ final: Int) -> Bool { placed.containsSorted(final) }
}

extension Array where Element == Int {
    /// The number of elements less than `value`, for an ascending array.
    func countLess(than value: Int) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether an ascending array contains `value`.
    func containsSorted(_ value: Int) -> Bool {
        let index = countLess(than: value)
        return index < count && self[index] == value
    }
}

extension Array {
    /// Removes the elements at `indices` (ascending, distinct) in one pass that starts at the first of them, so
    /// removing near the end of a long array costs little.
    mutating func remove(atSortedIndices indices: [Int]) {
        guard let first = indices.first else { return }
        withUnsafeMutableBufferPointer { buffer in
            var write = first
            var next = 0
            for read in first..<buffer.count {
                if next < indices.count, indices[next] == read {
                    next += 1
                } else {
                    buffer.swapAt(write, read)
                    write += 1
                }
            }
        }
        removeLast(indices.count)
    }

    /// Inserts each element at its final index (`placements` ascending by index, distinct, each below the final
    /// count), merging from the end so that every existing element moves at most once.
    mutating func insert(placements: [(index: Int, element: Element)]) {
        guard !placements.isEmpty else { return }
        let oldCount = count
        append(contentsOf: placements.map(\.element))
        withUnsafeMutableBufferPointer { buffer in
            var read = oldCount - 1
            var next = placements.count - 1
            var write = buffer.count - 1
            while next >= 0 {
                if placements[next].index == write {
                    buffer[write] = placements[next].element
                    next -= 1
                } else {
                    buffer.swapAt(write, read)
                    read -= 1
                }
                write -= 1
            }
        }
    }
}
