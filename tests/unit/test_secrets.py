"""Credentials never reach a message, a repr or a log line: one masking function, lakeformat.secrets."""
import logging

import pytest

import lakeformat as lf
from lakeformat.commit.lock import lock_from_options
from lakeformat.secrets import MaskingFilter, is_secret_key, mask, mask_options

PW = "hunter2-Sup3rSecret"


@pytest.mark.parametrize("text", [
    f"postgresql://etl:{PW}@db.example:5432/locks",
    f"lock.uri=postgresql://etl:{PW}@db/locks",
    f"{{'s3.secret-key': '{PW}', 's3.endpoint': 'http://minio:9000'}}",
    f'{{"password": "{PW}"}}',
    f"--conf spark.executorEnv.AWS_SECRET_ACCESS_KEY={PW} --master local",
    f"host=db user=etl password={PW} dbname=locks",
    f"s3.session-token: {PW}",
])
def test_mask_hides_credentials_in_every_form(text):
    out = mask(text)
    assert PW not in out and "***" in out


def test_mask_keeps_what_is_not_secret():
    text = "postgresql://etl@db:5432/locks bucket-key=id s3.endpoint=http://minio:9000"
    assert mask(text) == text
    assert mask("s3://bucket/warehouse") == "s3://bucket/warehouse"


def test_mask_options():
    opts = {"s3.secret-key": PW, "s3.access-key": "AKIA123", "lock.uri": f"postgresql://u:{PW}@h/d",
            "s3.endpoint": "http://minio:9000"}
    shown = mask_options(opts)
    assert shown == {"s3.secret-key": "***", "s3.access-key": "***", "lock.uri": "postgresql://u:***@h/d",
                     "s3.endpoint": "http://minio:9000"}
    assert is_secret_key("AWS_SECRET_ACCESS_KEY") and not is_secret_key("bucket-key")


def test_catalog_and_file_io_reprs_mask_the_s3_secret(tmp_path):
    cat = lf.Catalog("s3://bucket/wh", **{"s3.access-key": "AKIAEXAMPLE", "s3.secret-key": PW,
                                          "s3.endpoint": "http://127.0.0.1:1"})
    for shown in (repr(cat.io), repr(cat), str(cat.io)):
        assert PW not in shown and "AKIAEXAMPLE" not in shown


def test_registered_catalog_secret_is_masked_wherever_it_appears_later():
    lf.Catalog("s3://bucket/wh", **{"s3.access-key": "AKIAEXAMPLE", "s3.secret-key": "zz-registered-secret",
                                    "s3.endpoint": "http://127.0.0.1:1"})
    assert mask("driver said: bad key zz-registered-secret!") == "driver said: bad key ***!"


def test_a_secret_key_without_an_access_key_is_a_clear_error():
    with pytest.raises(lf.LakeformatError, match="s3") as e:
        lf.Catalog("s3://bucket/wh", **{"s3.secret-key": PW})
    assert PW not in str(e.value)


def test_lock_uri_errors_never_show_the_password(tmp_path):
    with pytest.raises(lf.OptionError) as e:
        lock_from_options(str(tmp_path), {"lock.enabled": "true", "lock.type": "postgres",
                                          "lock.uri": f"mysql://etl:{PW}@db/locks"})
    assert PW not in str(e.value) and "mysql://etl:***@db/locks" in str(e.value)
    with pytest.raises(lf.OptionError) as e:
        lock_from_options(str(tmp_path), {"lock.enabled": "true", "lock.type": "sqlite",
                                          "lock.uri": f"http://etl:{PW}@db/locks"})
    assert PW not in str(e.value)


def test_masking_filter_masks_log_records(caplog):
    log = logging.getLogger("lakeformat.test.secrets")
    log.addFilter(MaskingFilter())
    with caplog.at_level(logging.INFO, logger="lakeformat.test.secrets"):
        log.info("connecting with %s", {"lock.uri": f"postgresql://u:{PW}@h/d"})
        log.info(f"plain s3.secret-key={PW}")
    assert PW not in caplog.text and caplog.text.count("***") == 2
