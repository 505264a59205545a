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

extension Array where Element: Comparable {
    /// The number of elements less than `value`, for an ascending array; `from` is a position known to be at
    /// most the answer, which narrows the search.
    func countLess(than value: Element, from low: Int = 0) -> Int {
        var low = low
        var high = count
        // Bisect down to a few elements, then scan: rebasing searches the arrays of tiny batches far more often
        // than large ones, and scanning one or two elements is cheaper than setting up a bisection.
        while high - low > 8 {
            let middle = low + (high - low) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        while low < high, self[low] < value { low += 1 }
        return low
    }

    /// Whether an ascending array contains `value`.
    func containsSorted(_ value: Element) -> Bool {
        let index = countLess(than: value)
        return index < count && self[index] == value
    }
}

extension Array {
    /// Removes the elements at old indices `removed` and puts `placed` elements at their final indices, moving
    /// each surviving element once, in bulk: survivors form runs that keep their order, and each run is moved
    /// with one memmove-like call straight to its final place.
    ///
    /// `removed` must be ascending and distinct; `placed` ascending by index, distinct, each below the final count.
    mutating func replace(removing removed: [Int], placing placed: [(index: Int, element: Element)]) {
        let oldCount = count
        let newCount = oldCount - removed.count + placed.count
        let start = Swift.min(removed.first ?? oldCount, placed.first?.index ?? newCount)
        guard start < Swift.max(oldCount, newCount) else { return }
        guard newCount > 0 else { return removeAll(keepingCapacity: true) }
        // Kept apart: reading a field of a tuple element would copy the whole tuple.
        let targets = placed.map(\.index)
        let elements = placed.map(\.element)

        // Runs of survivors that stay adjacent: they end where a removal or a placement interrupts them.
        var runs: [(from: Int, to: Int, count: Int)] = []
        var old = start
        var final = start
        var nextRemoved = 0
        var nextTarget = 0
        while old < oldCount {
            if nextRemoved < removed.count, removed[nextRemoved] == old {
                old += 1
                nextRemoved += 1
                continue
            }
            while nextTarget < targets.count, targets[nextTarget] == final {
                final += 1
                nextTarget += 1
            }
            let segmentEnd = nextRemoved < removed.count ? removed[nextRemoved] : oldCount
            let room = nextTarget < targets.count ? targets[nextTarget] - final : Int.max
            let length = Swift.min(segmentEnd - old, room)
            runs.append((old, final, length))
            old += length
            final += length
        }

        if newCount > oldCount { append(contentsOf: elements[0..<(newCount - oldCount)]) }
        withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            // Turn removed elements and the growth slots into holes; every hole below newCount is filled below.
            for index in removed { (base + index).deinitialize(count: 1) }
            if newCount > oldCount { (base + oldCount).deinitialize(count: newCount - oldCount) }
            // Runs moving left only land on holes or on themselves when done in ascending order, and runs moving
            // right likewise in descending order; a left-moving run never lands where a right-moving run starts,
            // because final positions keep the order of the old ones.
            for run in runs where run.to < run.from {
                (base + run.to).moveInitialize(from: base + run.from, count: run.count)
            }
            for run in runs.reversed() where run.to > run.from {
                (base + run.to).moveInitialize(from: base + run.from, count: run.count)
            }
            for (target, element) in zip(targets, elements) { (base + target).initialize(to: element) }
            // Slots past the new count are holes; fill them so that removeLast can deinitialize them.
            if newCount < oldCount { (base + newCount).initialize(repeating: base[0], count: oldCount - newCount) }
        }
        if newCount < oldCount { removeLast(oldCount - newCount) }
    }
}
