import TablecastEditor
import XCTest

final class FrameTests: XCTestCase {
    func testLinesArePaddedAndCutToTheFrame() {
        let frame = Frame(width: 5, height: 3, lines: ["ab", "abcdefgh", "x", "dropped"])
        XCTAssertEqual(frame.lines, ["ab   ", "abcd…", "x    "])
    }

    func testFirstFrameDrawsEverythingAfterClearing() {
        let frame = Frame(width: 4, height: 2, lines: ["a", "b"])
        XCTAssertEqual(frame.changedLines(since: nil), [0, 1])
        XCTAssertEqual(frame.output(since: nil), "\u{1B}[2J\u{1B}[1;1Ha   \u{1B}[2;1Hb   ")
    }

    func testOnlyChangedLinesAreRewrittenWithoutClearing() {
        let old = Frame(width: 4, height: 4, lines: ["a", "b", "c", "d"])
        let new = Frame(width: 4, height: 4, lines: ["a", "B", "c", "D"])
        XCTAssertEqual(new.changedLines(since: old), [1, 3])
        XCTAssertEqual(new.output(since: old), "\u{1B}[2;1HB   \u{1B}[4;1HD   ")
        XCTAssertEqual(new.output(since: new), "")
    }

    func testAResizeRedrawsEverything() {
        let old = Frame(width: 4, height: 2, lines: ["a", "b"])
        let new = Frame(width: 5, height: 2, lines: ["a", "b"])
        XCTAssertEqual(new.changedLines(since: old), [0, 1])
        XCTAssertTrue(new.output(since: old).hasPrefix("\u{1B}[2J"))
    }
}
