module aicr.local/tools/url_ref

go 1.26.0
