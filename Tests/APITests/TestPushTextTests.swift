@testable import API
import Testing

/// The test push's texts by locale (DV-7): the language, and for Chinese the script.
@Suite struct TestPushTextTests {
    @Test(arguments: [
        ("pt-BR", "Notificação de teste"), ("es-419", "Notificación de prueba"), ("en", "Test notification"),
        (nil, "Test notification"), ("de", "Test notification"),
        ("zh-Hans-CN", "测试通知"), ("zh-CN", "测试通知"), ("zh", "测试通知"),
        ("zh-Hant-TW", "測試通知"), ("zh-TW", "測試通知"), ("zh-HK", "測試通知"), ("zh-Hans-HK", "测试通知"),
    ] as [(String?, String)])
    func titleFollowsLanguageAndScript(locale: String?, title: String) {
        #expect(TestPushText.text(locale: locale).0 == title)
    }
}
