import XCTest

@testable import TablecastServer

final class RefRegistryTests: XCTestCase {
    private let alice = RefOwner(principal: "", client: "c")
    private let use = RefUse(table: "t", epoch: 7, intent: .hash(0x0123_4567_89ab_cdef))

    /// A claim made after the owner's last connection closed must not make the owner look loaded, or its older
    /// stored refs would never be loaded and their retries applied again.
    func testAClaimAloneDoesNotCountAsLoaded() {
        let registry = RefRegistry(limit: 10)
        registry.load(alice, refs: ["a": use])
        XCTAssertTrue(registry.isLoaded(alice))
        registry.forget(alice)
        XCTAssertNil(registry.claim(alice, "b", for: use).prior)
        XCTAssertFalse(registry.isLoaded(alice))
        XCTAssertEqual(registry.lookup(alice, "b").use, use)
        registry.load(alice, refs: ["a": use, "b": use])
        XCTAssertTrue(registry.isLoaded(alice))
        XCTAssertEqual(registry.lookup(alice, "a").use, use)
        XCTAssertEqual(registry.lookup(alice, "b").use, use)
    }

    /// An intent's ref is claimed when it is resolved. If its owner's last connection closes before it is stored,
    /// and the owner says hello again and loads its stored refs meanwhile, the ref is not among them: keeping the
    /// claim once the intent is stored claims it again, or a retry would be applied twice. Without a forget in
    /// between, keeping changes nothing (the claim is still there).
    func testAKeptClaimOutlivesItsOwnerBeingForgottenAndLoadedAgain() {
        let registry = RefRegistry(limit: 10)
        registry.load(alice, refs: [:])
        let bob = RefOwner(principal: "", client: "b")
        let kept = registry.claim(alice, "r", for: use).claim
        let bobs = registry.claim(bob, "s", for: use).claim
        registry.forget(alice)
        registry.load(alice, refs: ["a": use])
        XCTAssertNil(registry.lookup(alice, "r").use)
        registry.keep(alice, "r", kept)
        XCTAssertEqual(registry.lookup(alice, "r").use, use)
        XCTAssertTrue(registry.isLoaded(alice))
        // Bob's claim predates the forget too, so it is claimed again, which finds it there.
        registry.keep(bob, "s", bobs)
        XCTAssertEqual(registry.lookup(bob, "s").use, use)
        // A claim made after the last forget is not looked up again: released meanwhile, it stays released.
        let late = registry.claim(alice, "t", for: use).claim
        registry.release(alice, "t", late)
        registry.keep(alice, "t", late)
        XCTAssertNil(registry.lookup(alice, "t").use)
    }

    func testKeepsTheLatestRefsUpToTheLimit() {
        let registry = RefRegistry(limit: 3)
        registry.load(alice, refs: [:])
        for ref in ["1", "2", "3", "4", "5"] { _ = registry.claim(alice, ref, for: use) }
        XCTAssertEqual(
            ["1", "2", "3", "4", "5"].map { registry.lookup(alice, $0).use != nil }, [false, false, true, true, true])
    }

    /// A ref names one use: a second claim returns the first use, whoever makes it; other owners (another principal
    /// with the same client id) are apart; a released claim frees the ref.
    func testAClaimReturnsTheUseTheRefAlreadyNames() {
        let registry = RefRegistry(limit: 10)
        let other = RefUse(table: "u", epoch: 7, intent: use.intent)
        let first = registry.claim(alice, "r", for: use)
        XCTAssertNil(first.prior)
        let second = registry.claim(alice, "r", for: other)
        XCTAssertEqual(second.prior, use)
        XCTAssertNil(registry.claim(RefOwner(principal: "p2", client: "c"), "r", for: other).prior)
        registry.release(alice, "r", second.claim)
        XCTAssertEqual(registry.lookup(alice, "r").use, use, "only the use that claimed it releases a ref")
        registry.release(alice, "r", first.claim)
        XCTAssertNil(registry.claim(alice, "r", for: other).prior)
        XCTAssertTrue(
            use.admits(use) && !use.admits(other) && RefUse(table: "t", epoch: 0, intent: .unknown).admits(use))
    }

    /// A table dropped and created again under its name is another table: a ref used on its older life is not
    /// retried on the new one. A ref stored before lives were recorded (epoch 0) is told apart by name only.
    func testARefOfAnOlderLifeOfTheTableAdmitsNoRetry() {
        var recreated = use
        recreated.epoch = 8
        XCTAssertFalse(use.admits(recreated))
        XCTAssertTrue(RefUse(table: "t", epoch: 0, intent: use.intent).admits(recreated))
    }

    /// Fingerprints are held as numbers and stored as sixteen lowercase hex digits, as they always were: stored
    /// text reads back as the fingerprint that wrote it, and any other stored text still equals only itself.
    func testAFingerprintIsStoredAsSixteenHexDigits() {
        XCTAssertEqual(use.intent.stored, "0123456789abcdef")
        XCTAssertEqual(IntentFingerprint.hash(.max).stored, "ffffffffffffffff")
        XCTAssertEqual(IntentFingerprint.hash(0xa).stored, "000000000000000a")
        for hash: UInt64 in [0, 1, 0xf, 0xdead_beef, .max, 0x8000_0000_0000_0000] {
            XCTAssertEqual(IntentFingerprint(stored: IntentFingerprint.hash(hash).stored), .hash(hash))
        }
        XCTAssertEqual(IntentFingerprint(stored: ""), .unknown)
        XCTAssertEqual(IntentFingerprint.unknown.stored, "")
        for text in ["0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "0123456789abcdeg", "f"] {
            XCTAssertEqual(IntentFingerprint(stored: text), .text(text))
            XCTAssertEqual(IntentFingerprint(stored: text).stored, text)
            XCTAssertFalse(RefUse(table: "t", epoch: 7, intent: .text(text)).admits(use))
        }
    }

    /// Claiming is in place: 100,000 claims against a full registry take well under a second (a copy of the set
    /// per claim took minutes).
    func testClaimingIsConstantTime() {
        let registry = RefRegistry(limit: 10_000)
        registry.load(alice, refs: [:])
        let start = ContinuousClock.now
        for n in 0..<100_000 { _ = registry.claim(alice, String(n), for: use) }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
        XCTAssertNotNil(registry.lookup(alice, "99999").use)
        XCTAssertNil(registry.lookup(alice, "89999").use)
    }

    func testTokenDigestMatchesTheStandardSHA256Vectors() {
        XCTAssertEqual(
            TokenDigest.sha256Hex("".utf8), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(
            TokenDigest.sha256Hex("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            TokenDigest.sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }
}
