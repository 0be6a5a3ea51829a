"""Local development on one machine: ``make demo`` (:mod:`.demo`), ``make airflow``
(:mod:`.airflow_server`), the embedded Airflow both use (:mod:`.airflow_home`) and the throwaway
PostgreSQL server Airflow and the lock tests run on (:mod:`.postgres`). Nothing else in the
package imports it."""
