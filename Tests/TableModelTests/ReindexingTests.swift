import XCTest

@testable import TableModel

/// The in-place array rearrangement behind `Table.apply`, checked against the naive reference and for object
/// lifetimes (each element destroyed exactly once, nothing leaked), since it moves elements through raw memory.
final class ReindexingTests: XCTestCase {
    final class Tracked {
        nonisolated(unsafe) static var alive = 0
        let value: Int
        init(_ value: Int) {
            self.value = value
            Tracked.alive += 1
        }
        deinit { Tracked.alive -= 1 }
    }

    func testReplaceMatchesRemoveThenInsertAndKeepsLifetimesBalanced() {
        withSeed { generator in
            for _ in 0..<2_000 {
                let aliveBefore = Tracked.alive
                do {
                    let count = Int.random(in: 0...12, using: &generator)
                    var array = (0..<count).map { Tracked($0) }
                    let removed = (0..<count).filter { _ in Int.random(in: 0..<3, using: &generator) == 0 }
                    let finalCount = count - removed.count + Int.random(in: 0...4, using: &generator)
                    let targets = Array(
                        (0..<finalCount).shuffled(using: &generator).prefix(finalCount - count + removed.count)
                    ).sorted()
                    let placed = targets.map { (index: $0, element: Tracked(100 + $0)) }

                    var expected = array.map(\.value)
                    for index in removed.reversed() { expected.remove(at: index) }
                    for (index, element) in placed { expected.insert(element.value, at: index) }

                    array.replace(removing: removed, placing: placed)
                    XCTAssertEqual(array.map(\.value), expected, "removing \(removed) placing \(targets) in \(count)")
                }
                XCTAssertEqual(Tracked.alive, aliveBefore, "leaked or over-released elements")
            }
        }
    }
}
