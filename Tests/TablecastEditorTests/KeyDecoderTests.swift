import TablecastEditor
import XCTest

final class KeyDecoderTests: XCTestCase {
    func testLettersControlAndEnter() {
        var decoder = KeyDecoder()
        XCTAssertEqual(
            decoder.decode(Array("aK?\r".utf8) + [3, 0x7F, 9]),
            [
                .character("a"), .character("K"), .character("?"), .enter, .ctrl("c"), .backspace, .tab,
            ])
    }

    func testArrowsAndOtherEscapeSequences() {
        var decoder = KeyDecoder()
        XCTAssertEqual(
            decoder.decode(Array("\u{1B}[A\u{1B}[B\u{1B}OC\u{1B}[D\u{1B}[3~\u{1B}[5~\u{1B}[H\u{1B}[F".utf8)),
            [.up, .down, .right, .left, .delete, .pageUp, .home, .end])
    }

    func testASequenceSplitAcrossReadsIsJoined() {
        var decoder = KeyDecoder()
        XCTAssertEqual(decoder.decode([0x1B]), [])
        XCTAssertEqual(decoder.decode(Array("[".utf8)), [])
        XCTAssertEqual(decoder.decode(Array("A".utf8)), [.up])
    }

    func testALoneEscapeIsTheEscapeKeyWhenFlushed() {
        var decoder = KeyDecoder()
        XCTAssertEqual(decoder.decode([0x1B]), [])
        XCTAssertEqual(decoder.decode([], flush: true), [.escape])
    }

    func testUTF8SplitAcrossReadsIsJoined() {
        var decoder = KeyDecoder()
        let bytes = Array("苹🍰".utf8)
        XCTAssertEqual(decoder.decode(Array(bytes[0..<2])), [])
        XCTAssertEqual(decoder.decode(Array(bytes[2..<5])), [.character("苹")])
        XCTAssertEqual(decoder.decode(Array(bytes[5...])), [.character("🍰")])
    }
}
