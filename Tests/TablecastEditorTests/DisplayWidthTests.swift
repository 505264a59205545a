import TablecastEditor
import XCTest

final class DisplayWidthTests: XCTestCase {
    func testASCIIIsOneColumnEach() {
        XCTAssertEqual(DisplayWidth.of("milk"), 4)
    }

    func testCJKAndEmojiAreTwoColumns() {
        XCTAssertEqual(DisplayWidth.of("苹果"), 4)
        XCTAssertEqual(DisplayWidth.of("한국"), 4)
        XCTAssertEqual(DisplayWidth.of("🍰"), 2)
        XCTAssertEqual(DisplayWidth.of("👍🏽"), 2) // skin tone modifier
        XCTAssertEqual(DisplayWidth.of("👩‍👩‍👧"), 2) // ZWJ family
        XCTAssertEqual(DisplayWidth.of("❤️"), 2) // text emoji with VS16
        XCTAssertEqual(DisplayWidth.of("🇫🇷"), 2) // flag
        XCTAssertEqual(DisplayWidth.of("ｆｕｌｌ"), 8) // fullwidth forms
    }

    func testCombiningMarksTakeNoColumn() {
        XCTAssertEqual(DisplayWidth.of("e\u{301}clair"), 6)
        XCTAssertEqual(DisplayWidth.of("a\u{308}\u{323}"), 1)
        XCTAssertEqual(DisplayWidth.of(Unicode.Scalar(0x301)!), 0)
    }

    func testFitPadsToExactlyTheWidth() {
        XCTAssertEqual(DisplayWidth.fit("fig", 6), "fig   ")
        XCTAssertEqual(DisplayWidth.fit("苹果", 6), "苹果  ")
        XCTAssertEqual(DisplayWidth.of(DisplayWidth.fit("é🍰x", 9)), 9)
    }

    func testFitCutsWithAnEllipsisNeverSplittingAWideCharacter() {
        XCTAssertEqual(DisplayWidth.fit("strawberries", 6), "straw…")
        // 苹果苹果 is 8 columns; in 6, two wide characters fit before the ellipsis, and a space fills the gap.
        XCTAssertEqual(DisplayWidth.fit("苹果苹果", 6), "苹果… ")
        XCTAssertEqual(DisplayWidth.of(DisplayWidth.fit("苹果苹果", 6)), 6)
        // A combining mark stays with its base character.
        XCTAssertEqual(DisplayWidth.fit("e\u{301}e\u{301}e\u{301}e\u{301}", 3), "e\u{301}e\u{301}…")
        XCTAssertEqual(DisplayWidth.fit("abc", 0), "")
    }

    func testControlCharactersAreShownAsQuestionMarks() {
        XCTAssertEqual(DisplayWidth.fit("a\nb\u{1B}[2J", 8), "a?b?[2J ")
    }
}
